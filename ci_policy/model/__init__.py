"""The checkout as the planner sees it: a `Snapshot` of its test files, registrations, gates and errors.

Built from the configuration and what `read` parses (`snapshot`); lint, estimates and discovery live here."""
