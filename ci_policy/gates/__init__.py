"""Metric-history gates: what a test file declares, which gates are required, and the verdicts of a run.

Pure functions; the history itself is kept by an adapter (`ci_policy.adapters.store`)."""
