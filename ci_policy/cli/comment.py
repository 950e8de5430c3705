"""`ci-policy comment`: handle a PR comment command (an issue_comment event).

- In: --trusted-repo (the default-branch checkout holding the access policy, the
  configuration and the labels; never the PR's), --event-path (the event payload), the
  configured repository, a token and its kind (--token-kind: a GitHub App's token, whose
  label events start workflow runs, or the job's token, after whose label commands the
  gateway re-runs the PR pipeline's run for the head), --commands (the kinds this job may
  carry out), --pipeline-workflow (the PR pipeline caller's file; default: the access
  policy's), --dry-run, --format text|json, --approver (the login the gateway's `ci-policy/ok-to-test`
  statuses are created by: github-actions[bot], the default, for the job's token; an App's
  NAME[bot]), --pipeline-workflow and --rerun-test-workflow (the workflow files dispatched
  where the access policy names none; default both ci-policy.yml, the one caller file).
- Out: the result (ignored, refused, done or failed) and its message, after a warning for
  each approval status another identity created; in dry-run every
  mutating request, printed instead of sent (JSON lines in text format, a list in json).
  Exit 1 when the command failed.
- Refused: a missing payload, repository or token, an unknown command kind, an
  --approver that is not a GitHub login, a workflow option that is not a file name (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ci_policy.app.comment import CommentRequest, comment
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_config, add_format, add_token, api_url, token
from ci_policy.cli.output import warn
from ci_policy.read.names import CALLER_WORKFLOW
from ci_policy.render.escape import one_line
from ci_policy.render.jsondoc import comment_json

NAME = "comment"
EXAMPLES = examples(
    ("what the comment of examples/comment-42.event.json asks, under the example's access policy,"
     " sending no change",
     "ci-policy comment --trusted-repo examples/gpu-repo --event-path examples/comment-42.event.json\n"
     "--repository acme/minirl --repository-id 424242 --dry-run"),
    ("the same, as JSON",
     "ci-policy comment --trusted-repo examples/gpu-repo --event-path examples/comment-42.event.json\n"
     "--repository acme/minirl --repository-id 424242 --dry-run --format json"))


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Handle a PR comment command (/add-label, /clear-labels, /rerun-failed-ci, "
                                   "/rerun-test) under the access policy of the trusted default branch.",
                       epilog=EXAMPLES)
    p.add_argument("--trusted-repo", default=".", metavar="DIR",
                   help="the TRUSTED default-branch checkout holding the access policy and configuration "
                        "(default: the current directory)")
    add_config(p, help="configuration file (default: DIR/.github/ci-policy.yml of the trusted checkout)")
    p.add_argument("--event-path", default=None, metavar="FILE",
                   help="the event payload (default $GITHUB_EVENT_PATH)")
    p.add_argument("--policy", default=None, metavar="FILE",
                   help="access policy (default DIR/.github/ci-commands.json)")
    p.add_argument("--repository", default=None, metavar="OWNER/NAME",
                   help="the configured repository (default $GITHUB_REPOSITORY)")
    p.add_argument("--repository-id", default=None, type=int, metavar="ID",
                   help="its numeric id (default $GITHUB_REPOSITORY_ID)")
    add_token(p, "for the GitHub API")
    p.add_argument("--token-kind", choices=("github-token", "app"), default="github-token",
                   help="app: a GitHub App's token, whose label events start the pull_request workflow; "
                        "github-token (default): the job's token, whose events start no run, so label commands "
                        "also re-run the head's pull_request run of the pipeline workflow")
    p.add_argument("--commands", default=None, metavar="KINDS",
                   help="comma-separated command kinds this job handles (add_label, clear_labels, "
                        "rerun_failed_ci, rerun_test, ok_to_test); others are ignored. Default: all")
    p.add_argument("--approver", default=None, metavar="LOGIN",
                   help="the identity this gateway's ci-policy/ok-to-test statuses are created by, the only one "
                        "whose approvals count (default github-actions[bot], the job's token; a GitHub App's "
                        "is NAME[bot])")
    p.add_argument("--pipeline-workflow", default=CALLER_WORKFLOW, metavar="FILE",
                   help="the workflow file that calls the PR pipeline, whose pull_request runs the commands re-run "
                        "(or dispatch, with no run for the head), when "
                        f".github/ci-commands.json names none (default {CALLER_WORKFLOW}, the one caller file)")
    p.add_argument("--rerun-test-workflow", default=CALLER_WORKFLOW, metavar="FILE",
                   help="the workflow file /rerun-test dispatches, when commands.rerun_test names none "
                        f"(default {CALLER_WORKFLOW})")
    p.add_argument("--dry-run", action="store_true",
                   help="print every mutating API request instead of sending it")
    add_format(p, ("text", "json"))
    return p


def run(args: argparse.Namespace) -> int:
    as_json = args.format == "json"
    result = comment(CommentRequest(Path(args.trusted_repo), args.config, args.event_path, args.policy,
                                    args.repository, args.repository_id, args.commands,
                                    lambda: token(args, "the comment gateway"), api_url(args),
                                    token_kind=args.token_kind, dry_run=args.dry_run, collect=as_json,
                                    approver=args.approver, pipeline_workflow=args.pipeline_workflow,
                                    rerun_test_workflow=args.rerun_test_workflow))
    for line in result.warnings:
        warn(NAME, args.format, line)
    if as_json:
        print(comment_json(result.status, result.message, result.exit_code, result.sent))
    else:
        print(f"ci-policy comment: {result.status}: {one_line(result.message)}",
              file=sys.stderr if args.dry_run else sys.stdout)
    return result.exit_code
