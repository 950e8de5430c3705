"""Training backend configurations."""
