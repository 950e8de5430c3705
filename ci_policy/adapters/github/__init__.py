"""GitHub: the REST client, PR comment commands, pull-request trust, status reports and run downloads.

PyGithub is imported by these modules only, so only the subcommands that talk to GitHub load it."""
