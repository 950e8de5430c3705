"""`ci-policy tune`: est_time proposals from the evidence of past runs, and the edits that apply them.

Evidence comes from timing records, job logs or downloaded runs; edits go to test files or the estimates file."""
