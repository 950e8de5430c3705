"""Metric-history gates: declarations (core) and, later, evaluation and stores (adapters)."""
