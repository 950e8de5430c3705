"""`ci-policy pull-request`: the pull request a pipeline run is for, its trust and its diff.

- In: --event-path (a `pull_request` event payload) or --number (read through the API:
  the PR's current head and labels, for a run a comment command dispatched);
  --repository (default $GITHUB_REPOSITORY, else the payload's base repository), the
  token ($GITHUB_TOKEN, or --token-env), --api-url, --diff-out, --format
  text|json|github. --repo is accepted as by every command; nothing is read from it.
- Out: number, head and base SHA, labels, trust (`plan.trust`) and the diff file, as
  text, JSON or $GITHUB_OUTPUT values (`render.pullrequest`). With --diff-out the PR's
  changes are written there in the form `plan --diff` reads; when the API gives no
  usable diff nothing is written, `diff_file` is empty and a warning says why.
- Refused: both or neither of --event-path and --number, a missing token or repository
  when the API is needed (exit 2); a payload that is not a pull request's, an API error
  (exit 1).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ci_policy.cli.main import summary
from ci_policy.cli.options import (
    add_format,
    add_repo,
    add_token,
    api_url,
    append_github_file,
    github_file,
    positive_int,
    token,
    warn,
)
from ci_policy.errors import InputError, UsageError

NAME = "pull-request"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Read the pull request a pipeline run is for (from the event payload or "
                                   "the API), decide its trust and optionally write its diff.")
    add_repo(p, help="the checkout (accepted as by every command; nothing is read from it)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--event-path", metavar="FILE", help="the payload of a pull_request event")
    source.add_argument("--number", type=positive_int, metavar="N",
                        help="the pull request number, read through the API (its current head and labels)")
    p.add_argument("--repository", default=None, metavar="OWNER/REPO",
                   help="the base repository (default $GITHUB_REPOSITORY, else the payload's)")
    add_token(p, "for the GitHub API")
    p.add_argument("--diff-out", default=None, metavar="FILE",
                   help="write the PR's changes here, as `plan --diff` reads them (from the API's diff)")
    add_format(p, ("text", "json", "github"))
    return p


def _payload_pull(path: str) -> dict:
    import json

    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"event payload {path} cannot be read as JSON: {exc}", path=path) from None
    except RecursionError:
        raise InputError(f"event payload {path} cannot be read as JSON: nested too deeply", path=path) from None
    pull = event.get("pull_request") if isinstance(event, dict) else None
    if not isinstance(pull, dict):
        raise InputError(f"event payload {path} is not a pull_request event's (no pull_request object)", path=path,
                         hint="pass --number N outside a pull_request event")
    return pull


def run(args: argparse.Namespace) -> int:
    from ci_policy.adapters.github.api import Api, github_api
    from ci_policy.adapters.github.pulls import decide, fetch_diff, fetch_pull_request, pull_request_of
    from ci_policy.render.pullrequest import pull_request_json, pull_request_outputs, pull_request_text

    output = github_file("GITHUB_OUTPUT") if args.format == "github" else None  # refused before any request
    repository = args.repository or os.environ.get("GITHUB_REPOSITORY") or None
    api: Api | None = None

    def client() -> Api:
        nonlocal api
        if api is None:
            if not repository:
                raise UsageError("the repository is unknown", source="--repository",
                                 hint="pass --repository OWNER/REPO, or set $GITHUB_REPOSITORY")
            api = github_api(token(args, "reading the pull request"), api_url(args), dry_run=False, out=sys.stdout)
        return api

    if args.number is not None:
        pull = fetch_pull_request(client(), repository or "", args.number)
    else:
        pull = pull_request_of(_payload_pull(args.event_path), "the event payload's pull_request",
                               args.event_path)
        if repository and repository.casefold() != pull.base_repository.casefold():
            raise InputError(f"the pull request is to {pull.base_repository}, not to {repository}",
                             path=args.event_path)
        repository = repository or pull.base_repository
    decision = decide(client, pull)
    diff_file = ""
    if args.diff_out:
        data, why = fetch_diff(client(), pull.base_repository, pull.number)
        if data is None:
            warn(NAME, args.format, f"the diff is unavailable, so every runnable stage runs: {why}")
        else:
            Path(args.diff_out).write_bytes(data)
            diff_file = args.diff_out
    if output is not None:
        import uuid

        append_github_file("GITHUB_OUTPUT", output,
                           pull_request_outputs(pull, decision, diff_file, f"ghadelimiter_{uuid.uuid4()}"))
        print(pull_request_text(pull, decision, diff_file))
    elif args.format == "json":
        print(pull_request_json(pull, decision, diff_file))
    else:
        print(pull_request_text(pull, decision, diff_file))
    return 0
