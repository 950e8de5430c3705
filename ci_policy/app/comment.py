"""`comment`: a PR comment command (an issue_comment event), under the trusted branch's access policy.

- In: a `CommentRequest`: the trusted checkout (never the PR's) and its configuration, the event
  payload's path (None: `$GITHUB_EVENT_PATH`), the access policy's path, the configured repository
  and its id (None: `$GITHUB_REPOSITORY`, `$GITHUB_REPOSITORY_ID`), the token (asked for once the
  rest is read) and its kind, the command kinds handled, dry-run, whether the dry-run
  requests are collected (json) or printed as they are made, the approver (the login
  the gateway's `ci-policy/ok-to-test` statuses are created by; None: `github-actions[bot]`),
  and the workflow files where the access policy names none: the pipeline's and
  `/rerun-test`'s (default both `CALLER_WORKFLOW`, the one caller file).
- Out: a `CommentResult`: the gateway's status, message and exit code, in json dry-run the
  requests it would have sent, and warnings (approval statuses another identity created).
- The pipeline workflow (the access policy's "pipeline", else `pipeline_workflow`) is the one
  whose pull_request runs the commands that start a run re-run, approve or, with no run for
  the head, dispatch.
- Refused: a missing payload, repository or repository id, an unknown command kind, an
  approver that is not a GitHub login, a workflow that is not a file name (`UsageError`);
  a payload or policy that cannot be read (exit 1).
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_policy.adapters.github.access import KINDS, WORKFLOW_FILE_RE, parse_access_policy, with_workflows
from ci_policy.adapters.github.api import github_api
from ci_policy.adapters.github.gateway import Gateway
from ci_policy.app.pull_request import approver_of
from ci_policy.config.load import load_config
from ci_policy.config.path import DEFAULT_CONFIG
from ci_policy.errors import InputError, UsageError
from ci_policy.read.checkout import read_text
from ci_policy.read.labels import load_labels
from ci_policy.read.names import CALLER_WORKFLOW


@dataclass(frozen=True)
class CommentRequest:
    trusted_repo: Path
    config: str | None
    event_path: str | None
    policy: str | None
    repository: str | None
    repository_id: int | None
    commands: str | None
    token: Callable[[], str]
    api_url: str
    token_kind: str = "github-token"
    dry_run: bool = False
    collect: bool = False          # json: the dry-run requests become part of the one document
    approver: str | None = None
    pipeline_workflow: str = CALLER_WORKFLOW     # where the access policy names no pipeline workflow
    rerun_test_workflow: str = CALLER_WORKFLOW   # where commands.rerun_test names no workflow


@dataclass(frozen=True)
class CommentResult:
    status: str
    message: str
    exit_code: int
    sent: list[Any] | None = None
    warnings: tuple[str, ...] = ()


def _json_file(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{what} {path} cannot be read as JSON: {exc}", path=str(path)) from None
    except RecursionError:
        raise InputError(f"{what} {path} cannot be read as JSON: nested too deeply", path=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(f"{what} {path} is not a JSON object", path=str(path))
    return data


def _repository(args: CommentRequest) -> tuple[str, int]:
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
    if not text:
        return None
    kinds = frozenset(k.strip() for k in text.split(",") if k.strip())
    unknown = sorted(kinds - set(KINDS))
    if unknown:
        raise UsageError(f"unknown command kind(s) {', '.join(unknown)}; expected some of {', '.join(KINDS)}",
                         source="--commands")
    return kinds


def _workflow(name: str, option: str) -> str:
    if not WORKFLOW_FILE_RE.fullmatch(name):
        raise UsageError(f"{name!r} is not a workflow file name", source=option,
                         hint=f"the file name under .github/workflows, e.g. {CALLER_WORKFLOW}")
    return name


def comment(args: CommentRequest) -> CommentResult:
    repo = args.trusted_repo
    pipeline = _workflow(args.pipeline_workflow, "--pipeline-workflow")
    rerun_test = _workflow(args.rerun_test_workflow, "--rerun-test-workflow")
    event_path = args.event_path or os.environ.get("GITHUB_EVENT_PATH")
    if not event_path:
        raise UsageError("no event payload", source="--event-path",
                         hint="pass --event-path FILE, or set $GITHUB_EVENT_PATH")
    kinds = _kinds(args.commands)
    approver = approver_of(args.approver)
    event = _json_file(Path(event_path), "event payload")
    repository, repository_id = _repository(args)
    config = load_config(repo, args.config)
    labels = load_labels(repo, config.labels_file)
    policy_rel = ".github/ci-commands.json"
    if args.policy:
        policy_text, policy_path = Path(args.policy).read_text(encoding="utf-8"), args.policy
    else:
        policy_text, policy_path = read_text(repo, policy_rel, what="access policy"), policy_rel
    access = with_workflows(parse_access_policy(policy_text, labels, policy_path), pipeline, rerun_test)
    secret = args.token()
    requests: io.StringIO | None = io.StringIO() if args.collect else None
    api = github_api(secret, args.api_url, dry_run=args.dry_run, out=requests or sys.stdout)
    config_path = Path(args.config) if args.config else repo / DEFAULT_CONFIG
    gateway = Gateway(api, access, config, config_path, kinds=kinds, token_kind=args.token_kind,
                      approver=approver)
    result = gateway.handle(event, repository, repository_id)
    sent: list[Any] | None = None
    if args.collect and args.dry_run and requests is not None:
        sent = [json.loads(line) for line in requests.getvalue().splitlines() if line]
    return CommentResult(result.status, result.message, result.exit_code, sent, tuple(gateway.warnings))
