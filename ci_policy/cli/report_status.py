"""`ci-policy report-status`: create one commit status (a result reported on a PR's head).

- In: --sha (40 hex), --context, --state pending|success|failure|error, --description,
  --target-url (http or https), --repository (default $GITHUB_REPOSITORY), the token
  ($GITHUB_TOKEN, or --token-env), --api-url, --format text|json. --repo is accepted as by
  every command; nothing is read from it.
- Out: the status created (text: one line; JSON: `{"schema", "sha", "context", "state",
  "description", "target_url"}`). A description longer than GitHub's 140 characters is
  cut to 137 and "...".
- Refused: with exit 2, before any request: a SHA that is not 40 hex digits, an empty context or
  one with control characters or over 255 characters, a target URL that is not http(s), a
  missing repository or token. An API error exits 1.
"""

from __future__ import annotations

import argparse
import json
import re

from ci_policy.app.report_status import StatusRequest, report_status
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_format, add_repo, add_token, api_url, token
from ci_policy.render.escape import one_line
from ci_policy.render.jsondoc import JSON_SCHEMA_VERSION

NAME = "report-status"
EXAMPLES = examples(
    ("the pipeline's result on a pull request's head (the token: $GITHUB_TOKEN)",
     "ci-policy report-status --repository acme/minirl --sha"
     " 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b\n"
     "--context ci-policy/result --state success --description \"every needed job"
     " succeeded\""),
    ("a failure, linked to the run that decided it",
     "ci-policy report-status --repository acme/minirl --sha"
     " 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b\n"
     "--context ci-policy/result --state failure --description \"job gpu failed\"\n"
     "--target-url https://github.com/acme/minirl/actions/runs/1"))
SHA_RE = re.compile(r"[0-9a-f]{40}")
CONTEXT_RE = re.compile(r"[^\x00-\x1f\x7f]{1,255}")
STATES = ("pending", "success", "failure", "error")
URL_RE = re.compile(r"https?://[^\s\x00-\x1f\x7f]+")


def _checked(pattern: re.Pattern[str], what: str):
    def check(text: str) -> str:
        if not pattern.fullmatch(text):
            raise argparse.ArgumentTypeError(f"{text[:80]!r} is not {what}")
        return text
    return check


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Create one commit status on a commit, e.g. ci-policy/result on a pull "
                                   "request's head SHA.",
                       epilog=EXAMPLES)
    add_repo(p, help="the checkout (accepted as by every command; nothing is read from it)")
    p.add_argument("--sha", required=True, type=_checked(SHA_RE, "a 40-hex commit SHA"), metavar="SHA",
                   help="the commit (40 hex digits)")
    p.add_argument("--context", required=True, type=_checked(CONTEXT_RE, "a status context"), metavar="CTX",
                   help="the status context: ci-policy/result, ci-policy/rerun-test, ...")
    p.add_argument("--state", required=True, choices=STATES, help="the state")
    p.add_argument("--description", required=True, metavar="TEXT",
                   help="one line shown beside the status (cut to 140 characters)")
    p.add_argument("--target-url", default=None, type=_checked(URL_RE, "an http(s) URL"), metavar="URL",
                   help="the link of the status (a workflow run)")
    p.add_argument("--repository", default=None, metavar="OWNER/REPO",
                   help="the repository (default $GITHUB_REPOSITORY)")
    add_token(p, "for the GitHub API")
    add_format(p, ("text", "json"))
    return p


def run(args: argparse.Namespace) -> int:
    body = report_status(StatusRequest(args.repository, args.sha, args.context, args.state, args.description,
                                       args.target_url, lambda: token(args, "reporting a status"), api_url(args)))
    if args.format == "json":
        print(json.dumps({"schema": JSON_SCHEMA_VERSION, "sha": args.sha, "context": body["context"],
                          "state": body["state"], "description": body["description"],
                          "target_url": body.get("target_url")}, indent=2))
    else:
        print(f"ci-policy report-status: {body['state']} {one_line(body['context'])} on {args.sha}: "
              f"{one_line(body['description'])}")
    return 0
