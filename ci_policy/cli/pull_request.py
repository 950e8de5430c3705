"""`ci-policy pull-request`: the pull request a pipeline run is for, its trust and its diff.

- In: --event-path (a `pull_request` event payload) or --number (read through the API:
  the PR's current head and labels: a pull_request run's labels in its payload are those of
  its event, stale in a re-run) with --expect-head (the head the run is for);
  --repository (default $GITHUB_REPOSITORY, else the payload's base repository), the
  token ($GITHUB_TOKEN, or --token-env), --api-url, --diff-out, --format
  text|json|github, --approver (the login whose `ci-policy/ok-to-test` statuses approve a
  fork's head; default github-actions[bot]). --repo is accepted as by every command;
  nothing is read from it.
- Out: number, head and base SHA, labels, trust (`plan.trust`) and the diff file, as
  text, JSON or $GITHUB_OUTPUT values (`render.pullrequest`). With --diff-out the PR's
  changes are written there in the form `plan --diff` reads (for a PR with no changed
  file, the line `ci-policy: no changed file`, which `plan` reads as no change); when the
  API gives no usable diff nothing is written, `diff_file` is empty and a warning says why. An
  approval status another identity created is ignored, with a warning naming it.
- Refused: both or neither of --event-path and --number, an --approver that is not a
  GitHub login, an --expect-head that is not a commit SHA or comes without --number, a
  missing token or repository when the API is needed (exit 2); a payload that is not a pull
  request's, an API error, a PR whose head is not --expect-head (exit 1).
"""

from __future__ import annotations

import argparse

from ci_policy.app.pull_request import PullRequestRequest, pull_request
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_format, add_repo, add_token, api_url, positive_int, token
from ci_policy.cli.output import append_github_file, github_file, output_delimiter, warn
from ci_policy.errors import UsageError
from ci_policy.render.pullrequest import pull_request_json, pull_request_outputs, pull_request_text

NAME = "pull-request"
EXAMPLES = examples(
    ("the pull request of a pull_request event's payload: head, labels, trust",
     "ci-policy pull-request --event-path examples/pr-42.event.json"),
    ("the same as JSON",
     "ci-policy pull-request --event-path examples/pr-42.event.json --format json"))


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Read the pull request a pipeline run is for (from the event payload or "
                                   "the API), decide its trust and optionally write its diff.",
                       epilog=EXAMPLES)
    add_repo(p, help="the checkout (accepted as by every command; nothing is read from it)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--event-path", metavar="FILE", help="the payload of a pull_request event")
    source.add_argument("--number", type=positive_int, metavar="N",
                        help="the pull request number, read through the API (its current head and labels)")
    p.add_argument("--expect-head", default=None, metavar="SHA",
                   help="with --number: the head commit this run is for (a pull_request run's event head); "
                        "refused when the PR's head is now another commit")
    p.add_argument("--repository", default=None, metavar="OWNER/REPO",
                   help="the base repository (default $GITHUB_REPOSITORY, else the payload's)")
    add_token(p, "for the GitHub API")
    p.add_argument("--diff-out", default=None, metavar="FILE",
                   help="write the PR's changes here, as `plan --diff` reads them (from the API's diff)")
    p.add_argument("--approver", default=None, metavar="LOGIN",
                   help="the identity whose ci-policy/ok-to-test statuses approve a fork's head: the one the "
                        "comment gateway writes them with (default github-actions[bot], a workflow's "
                        "GITHUB_TOKEN; a GitHub App's is NAME[bot]); statuses by anyone else are ignored")
    add_format(p, ("text", "json", "github"))
    return p


def run(args: argparse.Namespace) -> int:
    if args.expect_head is not None and args.number is None:
        raise UsageError("is the head a PR read through the API must still have", source="--expect-head",
                         hint="pass it with --number N")
    output = github_file("GITHUB_OUTPUT") if args.format == "github" else None  # refused before any request
    read = pull_request(PullRequestRequest(args.event_path, args.number, args.repository,
                                           lambda: token(args, "reading the pull request"), api_url(args),
                                           args.diff_out, args.approver, args.expect_head))
    pull, decision, diff_file = read.pull, read.decision, read.diff_file
    for line in decision.warnings:
        warn(NAME, args.format, line)
    if read.diff_unavailable is not None:
        warn(NAME, args.format, f"the diff is unavailable, so every runnable stage runs: {read.diff_unavailable}")
    if output is not None:
        append_github_file("GITHUB_OUTPUT", output,
                           pull_request_outputs(pull, decision, diff_file, output_delimiter()))
        print(pull_request_text(pull, decision, diff_file))
    elif args.format == "json":
        print(pull_request_json(pull, decision, diff_file))
    else:
        print(pull_request_text(pull, decision, diff_file))
    return 0
