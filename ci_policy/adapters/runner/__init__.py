"""The suite runner: one shard's test files as subprocesses, with their environment, timeouts and retries.

It writes each attempt's timing and metric records and gates a passing file's records."""
