"""Planning: which stages and test files an event runs, in which shards, and what the runs and gates gave.

Pure functions from a `Snapshot` and a trigger to a `Plan` (`build`), and from a plan to a stage job."""
