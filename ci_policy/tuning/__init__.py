"""est_time tuning (`ci-policy tune`): evidence from past runs, proposals, literal-only edits."""
