"""Everything that touches the world: git, processes, the scan cache, the metric store, GitHub, tuning.

The core (render and below) never imports this package; a subcommand imports only the adapters it uses."""
