"""`ci-policy comment`: handle a PR comment command (an issue_comment event).

- In: --trusted-repo (the default-branch checkout holding the access policy, the
  configuration and the labels; never the PR's), --event-path (the event payload), the
  configured repository, a token and its kind (--token-kind: a GitHub App's token, whose
  label events start workflow runs, or the job's token, after whose label commands the
  gateway dispatches the PR pipeline), --commands (the kinds this job may carry out),
  --dry-run, --format text|json.
- Out: the result (ignored, refused, done or failed) and its message; in dry-run every
  mutating request, printed instead of sent (JSON lines in text format, a list in json).
  Exit 1 when the command failed.
- Refused: a missing payload, repository or token, an unknown command kind (exit 2).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path
from typing import Any

from ci_policy.cli.main import summary
from ci_policy.cli.options import add_config, add_format, add_token, api_url, token
from ci_policy.errors import InputError, UsageError

NAME = "comment"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Handle a PR comment command (/add-label, /clear-labels, /rerun-failed-ci, "
                                   "/rerun-test) under the access policy of the trusted default branch.")
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
                        "also dispatch the pipeline workflow of .github/ci-commands.json")
    p.add_argument("--commands", default=None, metavar="KINDS",
                   help="comma-separated command kinds this job handles (add_label, clear_labels, "
                        "rerun_failed_ci, rerun_test, ok_to_test); others are ignored. Default: all")
    p.add_argument("--dry-run", action="store_true",
                   help="print every mutating API request instead of sending it")
    add_format(p, ("text", "json"))
    return p


def _json_file(path: Path, what: str) -> dict:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{what} {path} cannot be read as JSON: {exc}", path=str(path)) from None
    except RecursionError:
        raise InputError(f"{what} {path} cannot be read as JSON: nested too deeply", path=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(f"{what} {path} is not a JSON object", path=str(path))
    return data


def _repository(args: argparse.Namespace) -> tuple[str, int]:
    repository = args.repository or os.environ.get("GITHUB_REPOSITORY")
    if not repository:
        raise UsageError("the configured repository is unknown", source="--repository",
                         hint="pass --repository OWNER/NAME, or set $GITHUB_REPOSITORY")
    if args.repository_id is not None:
        return repository, args.repository_id
    text = os.environ.get("GITHUB_REPOSITORY_ID")
    if not text:
        raise UsageError("the configured repository's id is unknown", source="--repository-id",
                         hint="pass --repository-id ID, or set $GITHUB_REPOSITORY_ID")
    try:
        return repository, int(text)
    except ValueError:
        raise UsageError(f"is not a number: {text!r}", source="$GITHUB_REPOSITORY_ID") from None


def _kinds(text: str | None) -> frozenset[str] | None:
    from ci_policy.adapters.github.access import KINDS

    if not text:
        return None
    kinds = frozenset(k.strip() for k in text.split(",") if k.strip())
    unknown = sorted(kinds - set(KINDS))
    if unknown:
        raise UsageError(f"unknown command kind(s) {', '.join(unknown)}; expected some of {', '.join(KINDS)}",
                         source="--commands")
    return kinds


def run(args: argparse.Namespace) -> int:
    import json

    from ci_policy.adapters.github.access import parse_access_policy
    from ci_policy.adapters.github.api import github_api
    from ci_policy.adapters.github.gateway import Gateway
    from ci_policy.config.load import load_config
    from ci_policy.config.path import DEFAULT_CONFIG
    from ci_policy.read.checkout import read_text
    from ci_policy.read.labels import load_labels
    from ci_policy.render.escape import one_line
    from ci_policy.render.jsondoc import comment_json

    repo = Path(args.trusted_repo)
    event_path = args.event_path or os.environ.get("GITHUB_EVENT_PATH")
    if not event_path:
        raise UsageError("no event payload", source="--event-path",
                         hint="pass --event-path FILE, or set $GITHUB_EVENT_PATH")
    kinds = _kinds(args.commands)
    event = _json_file(Path(event_path), "event payload")
    repository, repository_id = _repository(args)
    config = load_config(repo, args.config)
    labels = load_labels(repo, config.labels_file)
    policy_rel = ".github/ci-commands.json"
    if args.policy:
        policy_text, policy_path = Path(args.policy).read_text(encoding="utf-8"), args.policy
    else:
        policy_text, policy_path = read_text(repo, policy_rel, what="access policy"), policy_rel
    access = parse_access_policy(policy_text, labels, policy_path)
    secret = token(args, "the comment gateway")
    as_json = args.format == "json"
    # In json format the dry-run requests become part of the one JSON document.
    requests: io.StringIO | None = io.StringIO() if as_json else None
    api = github_api(secret, api_url(args), dry_run=args.dry_run, out=requests or sys.stdout)
    config_path = Path(args.config) if args.config else repo / DEFAULT_CONFIG
    gateway = Gateway(api, access, config, config_path, kinds=kinds, token_kind=args.token_kind)
    result = gateway.handle(event, repository, repository_id)
    if as_json:
        sent: list[Any] | None = None
        if args.dry_run and requests is not None:
            sent = [json.loads(line) for line in requests.getvalue().splitlines() if line]
        print(comment_json(result.status, result.message, result.exit_code, sent))
    else:
        print(f"ci-policy comment: {result.status}: {one_line(result.message)}",
              file=sys.stderr if args.dry_run else sys.stdout)
    return result.exit_code
