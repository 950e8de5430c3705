"""`ci-policy history import`: timing records into the store's test history.

- In: PATH... (timing-record files `*.jsonl`, or directories of downloaded run artifacts, one
  `run-<id>/` per run, whose plan artifacts `ci-policy-plan-<attempt>/plan.json` and `run.json`
  give each run's accelerator hours scheduled and skipped, pull request runs included),
  --store URL or --store-file FILE (else `$CI_POLICY_DATABASE_URL`), --repo, --format text|json;
  --github-run RUN (repeatable) and --github-runs N --workflow FILE [--repository OWNER/REPO]
  (the workflow's last N completed runs, every event) with --api-url and --token-env: their
  timing and plan artifacts fetched (`app.history_runs`), the runs listed on stderr first.
- Out: text: one line, how many attempts (and plans) were read and how many were new (importing
  the same records again adds none), each warning of the read on stderr (records left out, a
  torn last line, a plan without its hours or its run.json); json: `{"schema": 1, "read",
  "added", "plans_read", "plans_added", "runs_read" (with --github-run(s)), "warnings"}`
  (schema `history`).
- Refused: no store named, a --store URL holding a password, --github-runs without --workflow
  (and back), a malformed run, no repository or token for the runs (exit 2); an API error, a
  missing path, a file that is not `*.jsonl`, malformed records (exit 1, each located, nothing
  imported); a store that cannot be reached (exit 1). A fetched artifact that does not read is
  skipped with a warning (a pull request's artifacts are anyone's data).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ci_policy.app.history import ImportRequest, import_history
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_format, add_repo, add_store, add_token, api_url, positive_int, token
from ci_policy.render.report import diagnostics

NAME = "history"


EXAMPLES = examples(
    ("a run's timing records into the SQLite history health.sqlite (created and migrated)",
     "ci-policy history import examples/timings.jsonl --store health.sqlite"),
    ("the same records again: nothing is added twice",
     "ci-policy history import examples/timings.jsonl --store health.sqlite"))

REPO_HELP = "the checkout (names the default store only; default: the current directory)"


def _options(p: argparse.ArgumentParser) -> None:
    add_repo(p, help=REPO_HELP)
    add_store(p)
    p.add_argument("--github-run", action="append", default=[], metavar="OWNER/REPO/RUN_ID",
                   help="fetch a run's timing and plan artifacts (or give its URL); repeatable")
    p.add_argument("--github-runs", type=positive_int, default=None, metavar="N",
                   help="fetch those of the last N completed runs of --workflow, of every event (pull requests "
                        "included)")
    p.add_argument("--workflow", default=None, metavar="FILE",
                   help="the workflow file name whose runs --github-runs reads (e.g. pr-pipeline.yml)")
    p.add_argument("--repository", default=None, metavar="OWNER/REPO",
                   help="for --github-runs (default $GITHUB_REPOSITORY)")
    add_token(p, "for --github-run and --github-runs")
    add_format(p, ("text", "json"))


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="The test history in the store, one row per attempt of a test file, which "
                                   "`ci-policy report` reads.", epilog=EXAMPLES)
    _options(p)
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    imp = actions.add_parser("import", help="load timing records into the store; idempotent",
                             description="Load the JSONL timing records `ci-policy run` writes (files, or "
                                         "directories of downloaded run artifacts, `run-<id>/` naming the run) "
                                         "into the store's test history, with the accelerator hours each run's "
                                         "plan artifact (ci-policy-plan-N/plan.json) scheduled and skipped. "
                                         "Importing them again adds nothing.",
                             epilog=EXAMPLES)
    imp.add_argument("paths", nargs="*", metavar="PATH",
                     help="timing-record files (*.jsonl) or directories walked for them; none: only migrate "
                          "the store")
    _options(imp)
    # The options are taken before the action too: after it, only those given replace them.
    for action in imp._actions:
        if action.option_strings and action.dest != "help":
            action.default = argparse.SUPPRESS
    return p


def run(args: argparse.Namespace) -> int:
    request = ImportRequest(Path(args.repo), tuple(args.paths), store=args.store, store_file=args.store_file,
                            runs=tuple(args.github_run), last_runs=args.github_runs, workflow=args.workflow,
                            repository=args.repository, api_url=api_url(args),
                            token=lambda needed_for: token(args, needed_for),
                            announce=lambda line: print(line, file=sys.stderr))
    if request.runs or request.last_runs is not None or request.workflow is not None:
        # Imported here: an import of local files needs no `github` extra (tests/cli/test_startup.py::
        # test_a_history_import_of_files_loads_no_github_module).
        from ci_policy.app.history_runs import import_runs

        imported = import_runs(request)
    else:
        imported = import_history(request)
    if args.format == "json":
        print(json.dumps({"schema": 1, "read": imported.read, "added": imported.added,
                          "plans_read": imported.plans_read, "plans_added": imported.plans_added,
                          **({"runs_read": list(imported.runs_read)} if request.runs or request.last_runs else {}),
                          "warnings": [w.as_dict() for w in imported.warnings]}, indent=2))
        return 0
    if imported.warnings:
        print(diagnostics(imported.warnings, "text"), file=sys.stderr)
    print(f"ci-policy history import: {imported.read} attempt(s) read, {imported.added} new, "
          f"{imported.read - imported.added} already in the store"
          + (f"; {imported.plans_read} plan(s) read, {imported.plans_added} new" if imported.plans_read else ""))
    return 0
