"""`ci-policy comment` (an adapter): PR comment commands, authorised and replayable.

- In: an `issue_comment` event payload, the access policy and configuration of the
  trusted default-branch checkout, an API client (PyGithub's requester) and the
  configured repository (full name and id).
- Out: the API requests of the command's action, a +1 reaction and/or a reply, and a
  one-line result. With `dry_run`, every mutating request is printed as a JSON line
  (`{"method", "path", "body"}`) instead of sent; reads still happen.
- Refused: a comment it does not consider is ignored with a one-line reason, no API call; a
  malformed (`GrammarError`), disabled or unauthorised command gets a reply saying why and
  nothing else; a `/rerun-test` file that is missing, a symlink, not a regular file or too
  large at the head, or that the file-run resolver refuses, and a PR-body pin set twice or
  not matching its pattern (`InputError`), get a reply naming the problem.
- Considered only: `created` comments on pull requests, by a human (`type == "User"`)
  whose id equals the sender's, in the configured repository (id and full name).
  Anything else is ignored with a one-line reason and no API call.
- Authorisation asks `GET /repos/{owner}/{repo}/collaborators/{user}/permission`, never
  `author_association` or the actor's name; an unauthorised command gets a reply and
  makes no other mutating request. A malformed or disabled command gets a reply only
  when its author may use some command; anyone else's is ignored without one.
- Starting runs, so that the checks land on the PR head (a `pull_request` run's checks attach
  to the PR's head commit; a `workflow_dispatch` run's to the dispatched branch's head, the
  default branch): a label command with an App token (`token_kind="app"`) only adds the label
  (its `labeled` event starts the caller's pull_request workflow). Otherwise (a label command
  with the job's token, whose events start no run; `/ok-to-test`; `/rerun-failed-ci`) the
  gateway finds the PR pipeline's latest `pull_request` run for the PR's current head
  (`GET .../actions/workflows/{file}/runs?head_sha=<head>&event=pull_request&per_page=1`,
  the file: `--pipeline-workflow`, else the access policy's "pipeline") and:
  awaiting a maintainer's approval (a first-time contributor's fork run, status or conclusion
  `action_required`): `POST .../actions/runs/{id}/approve`; still running: nothing (the
  reply says so); completed: `/rerun-failed-ci` re-runs its failed jobs and their dependents
  (`POST .../rerun-failed-jobs`; nothing when it succeeded), the others the whole run
  (`POST .../rerun`): its plan job reads the PR's labels and approval again through the API.
  A re-run keeps its event and head, so its checks attach to that head again. Only a run for
  the current head is ever re-run: a run for an older head is never found, and the plan job
  refuses a re-run whose head is no longer the PR's. With no run for the head at all, the
  pipeline is dispatched on the default branch (`POST .../dispatches`, inputs
  `{"pull-request": "<n>"}`): that run reports `ci-policy/result` on the PR head.
- `/ok-to-test <sha prefix>` (write, maintain or admin permission only): the prefix (16 to
  40 hex digits, `grammar`) must match the PR's current head, else a reply names the head and nothing is written; then
  a `ci-policy/ok-to-test` success status on exactly that SHA (naming the approver), and
  the head's run is started as above.
- `/rerun-test` of an outside contributor's head (`plan.trust`) runs only when that head
  carries the approval status created by `approver` (the identity this gateway writes it
  with); an approval status anyone else created is ignored and named in `warnings`.
- `/rerun-test` reads the PR head SHA at comment time and resolves the file from that
  commit's tree as data (the Git trees/blobs API; symlinks refused) with the trusted
  configuration and the PR's own `labels.py`, then dispatches the rerun workflow with
  that SHA, and with the stage when the command named one or `file_run.prefer` chose it
  among the file's registrations. Nothing from a comment or the PR reaches a shell.
"""

from __future__ import annotations

import base64
import re
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ci_policy.adapters.github.access import APPROVERS, PERMISSIONS, AccessPolicy
from ci_policy.adapters.github.api import Api, ApiError
from ci_policy.adapters.github.grammar import Command, GrammarError, parse
from ci_policy.adapters.github.pulls import decide, pull_request_of
from ci_policy.config.file_run import IMAGE_TAG_RE
from ci_policy.config.top import Config
from ci_policy.errors import InputError, InputErrors
from ci_policy.plan.filerun import FilePlan, resolve_file
from ci_policy.plan.trust import APPROVAL_CONTEXT, DEFAULT_APPROVER
from ci_policy.read.checkout import MAX_FILE_BYTES
from ci_policy.read.names import CI_LABEL_PREFIX, WORKFLOW_ONLY_LABELS

NO_PIPELINE = '.github/ci-commands.json names no pipeline workflow ("pipeline": {"workflow": ...})'
SYMLINK_MODE = "120000"
# A run GitHub holds until a maintainer approves it (a first-time contributor's fork PR).
AWAITING_APPROVAL = "action_required"


@dataclass(frozen=True)
class Started:
    """What the gateway did to get a pipeline run for a head: `how` is approved (a held fork
    run), rerun (the whole run), rerun-failed (its failed jobs), running (nothing: the run is
    in progress), passed (nothing: `/rerun-failed-ci` of a run that succeeded) or dispatched
    (no run for the head existed)."""

    how: str
    workflow: str
    run_id: int | None = None
    url: str = ""

    @property
    def link(self) -> str:
        return f"[run {self.run_id}]({self.url})" if self.url else f"run {self.run_id}"

    def summary(self, pull_number: int, sha: str) -> str:
        """The result line's words."""
        return {"approved": f"approved run {self.run_id} of {self.workflow} for {sha}",
                "rerun": f"re-running run {self.run_id} of {self.workflow} for {sha}",
                "rerun-failed": f"re-running the failed jobs of run {self.run_id} of {self.workflow} for {sha}",
                "running": f"run {self.run_id} of {self.workflow} for {sha} is still running; not re-run",
                "passed": f"run {self.run_id} of {self.workflow} for {sha} succeeded; nothing to re-run",
                "dispatched": f"dispatched {self.workflow} for #{pull_number} (no run for {sha})"}[self.how]

    def sentence(self, sha: str) -> str:
        """What the reply tells the PR."""
        short = sha[:12]
        return {"approved": f"Approved the waiting {self.link} for `{short}`: it runs now.",
                "rerun": f"Re-running {self.link} for `{short}`.",
                "rerun-failed": f"Re-running the failed jobs of {self.link} for `{short}`.",
                "running": f"{self.link} for `{short}` is still running, so it was not re-run: comment again "
                           "once it has finished.",
                "passed": f"{self.link} for `{short}` succeeded: there is no failed job to re-run.",
                "dispatched": f"No `{self.workflow}` run exists for `{short}`, so one was dispatched on the default "
                              f"branch: its checks show on that branch's head, and it reports `ci-policy/result` on "
                              f"`{short}`."}[self.how]


@dataclass
class Context:
    repository: str
    repository_id: int
    pull_number: int
    comment_id: int
    user_login: str
    user_id: int
    default_branch: str
    comment_url: str = ""


@dataclass
class Result:
    status: str        # ignored | refused | done | failed
    message: str
    exit_code: int = 0
    details: dict = field(default_factory=dict)


def screen(event: dict, repository: str, repository_id: int) -> tuple[Context | None, str]:
    """Who may be heard at all; the reason when not."""
    def get(*path: str, default: Any = None) -> Any:
        value: Any = event
        for key in path:
            if not isinstance(value, dict):
                return default
            value = value.get(key)
        return default if value is None else value

    if get("action") != "created":
        return None, f"comment action is {get('action')!r}, not 'created'"
    if not get("issue", "pull_request"):
        return None, "the comment is not on a pull request"
    user_type, user_id, sender_id = get("comment", "user", "type"), get("comment", "user", "id"), get("sender", "id")
    if user_type != "User":
        return None, f"the comment author is a {user_type!r}, not a human user"
    if not isinstance(user_id, int) or user_id != sender_id:
        return None, "the comment author is not the event sender"
    if get("repository", "full_name") != repository or get("repository", "id") != repository_id:
        return None, (f"the event is for repository {get('repository', 'full_name')!r} "
                      f"(id {get('repository', 'id')}), not {repository} (id {repository_id})")
    number, comment_id = get("issue", "number"), get("comment", "id")
    if not isinstance(number, int) or not isinstance(comment_id, int):
        return None, "the event has no issue number or comment id"
    return Context(repository=repository, repository_id=repository_id, pull_number=number,
                   comment_id=comment_id, user_login=str(get("comment", "user", "login", default="")),
                   user_id=user_id, default_branch=str(get("repository", "default_branch", default="main")),
                   comment_url=url if isinstance(url := get("comment", "html_url"), str)
                   and url.startswith("https://") else ""), ""


def policy_key(command: Command) -> str:
    return "add_label" if command.kind == "bypass_fastfail" else command.kind


class Gateway:
    def __init__(self, api: Api, access: AccessPolicy, config: Config, config_path: Path, *,
                 kinds: frozenset[str] | None = None, token_kind: str = "github-token",
                 approver: str = DEFAULT_APPROVER,
                 poll: Callable[[float], None] = time.sleep, poll_attempts: int = 5) -> None:
        # `kinds`: the policy commands this job may carry out (its token is scoped to them).
        self.kinds = kinds
        # `token_kind`: "app" (a GitHub App token: its label events start workflow runs) or
        # "github-token" (the job's token: its events start none, so the gateway dispatches).
        self.token_kind = token_kind
        # `approver`: the login of the identity this gateway's approvals are created by; only
        # its ci-policy/ok-to-test statuses approve a head.
        self.approver = approver
        # The PR pipeline's caller file: the policy's, filled in with the gateway's input
        # (`access.with_workflows`) where the policy names none.
        self.pipeline_workflow = access.pipeline_workflow
        self.warnings: list[str] = []
        self.api = api
        self.access = access
        self.config = config
        self.config_path = config_path
        self.poll = poll
        self.poll_attempts = poll_attempts

    # -- replies --------------------------------------------------------------------------
    def reply(self, ctx: Context, command: Command | None, text: str) -> None:
        quoted = f"> {command}\n\n" if command is not None else ""
        self.api.mutate("POST", f"/repos/{ctx.repository}/issues/{ctx.pull_number}/comments",
                        {"body": quoted + text})

    def react(self, ctx: Context) -> None:
        self.api.mutate("POST", f"/repos/{ctx.repository}/issues/comments/{ctx.comment_id}/reactions",
                        {"content": "+1"})

    # -- the flow -------------------------------------------------------------------------
    def handle(self, event: dict, repository: str, repository_id: int) -> Result:
        ctx, why = screen(event, repository, repository_id)
        if ctx is None:
            return Result("ignored", why)
        try:
            return self._handle(ctx, event)
        except ApiError as exc:  # a reply could not be posted either
            return Result("failed", str(exc), exit_code=1)

    def _handle(self, ctx: Context, event: dict) -> Result:
        body = (event.get("comment") or {}).get("body") or ""
        try:
            command = parse(body if isinstance(body, str) else "")
        except GrammarError as exc:
            # Only someone who may use a command hears about a malformed one: anyone else's
            # comment is ignored without a reply (a bot reply is an amplifier).
            if not self.access.admits_anywhere(self.permission(ctx), ctx.user_id):
                return Result("ignored", "not exactly one command, from a commenter who may use none")
            self.reply(ctx, None, str(exc))
            return Result("refused", "not exactly one command")
        if command is None:
            return Result("ignored", "not a command")
        if self.kinds is not None and policy_key(command) not in self.kinds:
            return Result("ignored", f"{command} is handled by another job")
        if command.kind == "ok_to_test":
            return self._approve(ctx, command)
        policy = self.access.command(policy_key(command))
        if policy is None:
            if not self.access.admits_anywhere(self.permission(ctx), ctx.user_id):
                return Result("ignored", f"{command} is not enabled, from a commenter who may use no command")
            self.reply(ctx, command, f"`{command}` is not enabled for this repository.")
            return Result("refused", f"{command} is not enabled")
        try:
            permission = self.permission(ctx)
            group = self.access.group(policy.group)
            if not group.admits(permission, ctx.user_id):
                self.reply(ctx, command, f"@{ctx.user_login} is not allowed to use `{command}` "
                           f"(it needs the {group.name} group; your repository permission is {permission}).")
                return Result("refused", f"{ctx.user_login} ({permission}) is not in group {group.name}")
            return getattr(self, f"do_{command.kind}")(ctx, command, policy)
        except ApiError as exc:
            self.reply(ctx, command, f"`{command}` failed: {exc}.")
            return Result("failed", str(exc), exit_code=1)

    def permission(self, ctx: Context) -> str:
        login = urllib.parse.quote(ctx.user_login, safe="")
        try:
            data = self.api.get(f"/repos/{ctx.repository}/collaborators/{login}/permission")
        except ApiError as exc:
            if exc.status == 404:
                return "none"
            raise
        if not isinstance(data, dict):
            return "none"
        user_id = (data.get("user") or {}).get("id") if isinstance(data.get("user"), dict) else None
        if user_id is not None and user_id != ctx.user_id:
            return "none"  # the login now belongs to someone else (renamed account): never trust it
        # `permission` holds the legacy base role only (maintain -> write, triage -> read);
        # `role_name` holds the role itself (or a custom role's name: then the base role applies).
        role = data.get("role_name")
        return role if role in PERMISSIONS else str(data.get("permission", "none"))

    # -- actions --------------------------------------------------------------------------
    def _add(self, ctx: Context, command: Command, policy, label: str) -> Result:
        if label not in policy.allowed_labels:
            self.reply(ctx, command, f"`{label}` is not a label this command may add "
                       f"(allowed: {', '.join(policy.allowed_labels)}).")
            return Result("refused", f"label {label} is not allowed")
        try:
            self.api.get(f"/repos/{ctx.repository}/labels/{urllib.parse.quote(label, safe='')}")
        except ApiError as exc:
            if exc.status != 404:
                raise
            self.reply(ctx, command, f"the label `{label}` does not exist in this repository.")
            return Result("refused", f"label {label} does not exist")
        self.api.mutate("POST", f"/repos/{ctx.repository}/issues/{ctx.pull_number}/labels", {"labels": [label]})
        if self.token_kind == "app":
            # The App's label event starts the caller's pull_request workflow by itself.
            self.react(ctx)
            return Result("done", f"added {label}")
        sha, _body, _pull = self.head(ctx)
        started = self.start_pipeline(ctx, sha)
        self.react(ctx)
        if started is None:
            self.reply(ctx, command, f"added `{label}`, but no run was started: {NO_PIPELINE}.")
            return Result("done", f"added {label}; no pipeline workflow to start")
        if started.how in ("running", "dispatched"):
            self.reply(ctx, command, f"added `{label}`. {started.sentence(sha)}")
        return Result("done", f"added {label}; {started.summary(ctx.pull_number, sha)}")

    def start_pipeline(self, ctx: Context, sha: str, *, failed_only: bool = False) -> Started | None:
        """Get the PR pipeline run for head `sha` going again; None without a pipeline workflow.

        The latest `pull_request` run for `sha` (never one for another head) is approved,
        re-run whole, or re-run for its failed jobs (`failed_only`); its plan job reads the
        PR's current labels and approval through the API. Without such a run, a dispatch.
        """
        workflow = self.pipeline_workflow
        if workflow is None:
            return None
        runs = self.api.get(f"/repos/{ctx.repository}/actions/workflows/{workflow}/runs",
                            {"head_sha": sha, "event": "pull_request", "per_page": 1}) or {}
        listed = runs.get("workflow_runs") if isinstance(runs, dict) else None
        latest = next((run for run in listed or [] if isinstance(run, dict) and run.get("head_sha") == sha
                       and isinstance(run.get("id"), int) and run.get("event") == "pull_request"), None)
        if latest is None:
            # No run GitHub attaches to the PR exists: a dispatched run is the only way left.
            self.api.mutate("POST", f"/repos/{ctx.repository}/actions/workflows/{workflow}/dispatches",
                            {"ref": ctx.default_branch, "inputs": {"pull-request": str(ctx.pull_number)}})
            return Started("dispatched", workflow)
        run_id = latest["id"]
        link = latest.get("html_url")
        url = link if isinstance(link, str) and link.startswith("https://") else ""
        status, conclusion = latest.get("status"), latest.get("conclusion")
        path = f"/repos/{ctx.repository}/actions/runs/{run_id}"
        if AWAITING_APPROVAL in (status, conclusion):
            self.api.mutate("POST", f"{path}/approve")
            return Started("approved", workflow, run_id, url)
        if status != "completed":
            # GitHub re-runs only a completed run.
            return Started("running", workflow, run_id, url)
        if failed_only:
            if conclusion == "success":
                return Started("passed", workflow, run_id, url)
            self.api.mutate("POST", f"{path}/rerun-failed-jobs")
            return Started("rerun-failed", workflow, run_id, url)
        self.api.mutate("POST", f"{path}/rerun")
        return Started("rerun", workflow, run_id, url)

    def do_add_label(self, ctx, command, policy) -> Result:
        return self._add(ctx, command, policy, command.argument)

    def do_bypass_fastfail(self, ctx, command, policy) -> Result:
        return self._add(ctx, command, policy, "bypass-fastfail")

    def do_clear_labels(self, ctx, command, policy) -> Result:
        labels = self.api.get(f"/repos/{ctx.repository}/issues/{ctx.pull_number}/labels",
                              {"per_page": 100}) or []
        names = [lab.get("name") for lab in labels if isinstance(lab, dict)]
        removed = [n for n in names
                   if isinstance(n, str) and (n.startswith(CI_LABEL_PREFIX) or n in WORKFLOW_ONLY_LABELS)]
        for name in removed:
            self.api.mutate("DELETE", f"/repos/{ctx.repository}/issues/{ctx.pull_number}/labels/"
                            f"{urllib.parse.quote(name, safe='')}")
        self.react(ctx)
        if not removed:
            self.reply(ctx, command, "there were no CI labels to remove.")
        return Result("done", f"removed {len(removed)} CI label(s)" + (f": {', '.join(removed)}" if removed else ""))

    def head(self, ctx: Context) -> tuple[str, str, dict]:
        """The PR's head SHA, its body and the whole answer."""
        pull = self.api.get(f"/repos/{ctx.repository}/pulls/{ctx.pull_number}")
        sha = ((pull or {}).get("head") or {}).get("sha")
        if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}", sha):
            raise ApiError(0, "the pull request has no valid head SHA")
        return sha, (pull.get("body") or ""), pull

    def do_rerun_failed_ci(self, ctx, command, policy) -> Result:
        sha, _body, _pull = self.head(ctx)
        started = self.start_pipeline(ctx, sha, failed_only=True)
        if started is None:  # the access policy refuses rerun_failed_ci without one; kept for safety
            self.reply(ctx, command, f"no run was started: {NO_PIPELINE}.")
            return Result("refused", "no pipeline workflow to start")
        self.react(ctx)
        if started.how in ("running", "passed", "dispatched"):
            self.reply(ctx, command, started.sentence(sha))
        return Result("done", started.summary(ctx.pull_number, sha))

    # -- /ok-to-test ----------------------------------------------------------------------
    def _approve(self, ctx: Context, command: Command) -> Result:
        try:
            permission = self.permission(ctx)
            if permission not in APPROVERS:
                self.reply(ctx, command, f"@{ctx.user_login} is not allowed to use `/ok-to-test` (it needs "
                           f"{', '.join(APPROVERS)} permission; yours is {permission}).")
                return Result("refused", f"{ctx.user_login} ({permission}) may not approve")
            pull = self.api.get(f"/repos/{ctx.repository}/pulls/{ctx.pull_number}")
            sha = ((pull or {}).get("head") or {}).get("sha")
            if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}", sha):
                raise ApiError(0, "the pull request has no valid head SHA")
            prefix = command.argument or ""
            if not sha.startswith(prefix):
                # The head moved after the maintainer looked (or they named another commit):
                # an approval is for the code they reviewed, so nothing is written.
                self.reply(ctx, command, f"`{prefix}` is not the pull request's current head, `{sha}`. Review "
                           f"the new commits, then comment `/ok-to-test {sha}`.")
                return Result("refused", f"{prefix} is not the current head {sha}")
            status = {"state": "success", "context": APPROVAL_CONTEXT,
                      "description": f"approved by {ctx.user_login}"[:140]}
            if ctx.comment_url:
                status["target_url"] = ctx.comment_url
            self.api.mutate("POST", f"/repos/{ctx.repository}/statuses/{sha}", status)
            started = self.start_pipeline(ctx, sha)
            self.react(ctx)
            said = started.sentence(sha) if started else f"No run was started: {NO_PIPELINE}."
            self.reply(ctx, command, f"Approved `{sha}` for CI (`{APPROVAL_CONTEXT}` on that commit; a new "
                       f"push needs a new approval). {said}")
            return Result("done", f"approved {sha}; " + (started.summary(ctx.pull_number, sha) if started
                                                         else "no pipeline workflow to start"))
        except ApiError as exc:
            self.reply(ctx, command, f"`{command}` failed: {exc}.")
            return Result("failed", str(exc), exit_code=1)

    def do_rerun_test(self, ctx, command, policy) -> Result:
        sha, pr_body, pull = self.head(ctx)  # the SHA at comment time is the one that runs
        try:
            trust = decide(lambda: self.api, pull_request_of(pull, f"pull request #{ctx.pull_number}"),
                           self.approver)
        except InputError as exc:
            raise ApiError(0, exc.message) from None
        self.warnings.extend(trust.warnings)
        if trust.trust == "untrusted":
            # An outside contributor's code reaches an accelerator runner only once a maintainer
            # approved exactly this head (`/ok-to-test`), as in the pipeline.
            self.reply(ctx, command, f"`{sha}` is an outside contributor's head that is not approved for CI: a "
                       f"maintainer reviews it and comments `/ok-to-test {sha}` first.")
            return Result("refused", f"untrusted head {sha} not approved")
        try:
            pins = pins_from_body(pr_body, policy.pins)
            plan = self.resolve_at(ctx, sha, command.argument, pins.get("ci-image-tag"), command.target)
        except (InputError, InputErrors) as exc:
            errors = exc.errors if isinstance(exc, InputErrors) else (exc,)
            text = "; ".join(e.message for e in errors)
            # The PR's author controls much of this text (file contents, reasons, pins):
            # quoted as code, it cannot carry links or @mentions into the bot's comment.
            self.reply(ctx, command, f"cannot rerun `{command.argument}`: {as_code(text)}")
            return Result("refused", text)
        inputs = {"pull_number": str(ctx.pull_number), "head_sha": sha, "test_file": plan.file,
                  "image_tag": pins.get("ci-image-tag", "")}
        if command.target or plan.choice is not None:
            # The stage the gateway resolved (named, or chosen by `file_run.prefer`): the rerun
            # workflow resolves the same registration even if the configuration changes meanwhile.
            # Its key: a name several backends configure names one stage only with `@BACKEND`;
            # a named variant (`KEY+VARIANT`) is kept, so the rerun runs on its runners too.
            variant = (command.target or "").partition("+")[2]
            inputs["stage"] = self.config.key_of(plan.hw, plan.suite) + (f"+{variant}" if variant else "")
        for name, _pattern in policy.pins:
            inputs[pin_input(name)] = pins.get(name, "")
        ref = policy.ref or ctx.default_branch
        self.api.mutate("POST", f"/repos/{ctx.repository}/actions/workflows/{policy.workflow}/dispatches",
                        {"ref": ref, "inputs": inputs})
        link = self.find_run(ctx, policy.workflow, run_name(ctx.pull_number, plan.file, sha))
        self.react(ctx)
        where = ", ".join(plan.runs_on) or "the default runner"
        chosen = (f"; chosen by {plan.choice.by} of {len(plan.choice.among)} registrations"
                  if plan.choice is not None else "")
        self.reply(ctx, command, f"Rerunning `{plan.file}` ({plan.hw}, {plan.suite}{chosen}) on [{where}] at "
                   f"{sha[:12]}, timeout {plan.timeout_seconds}s: {link}")
        return Result("done", f"dispatched {policy.workflow} for {plan.file} at {sha}",
                      details={"inputs": inputs, "plan": plan.as_dict()})

    def resolve_at(self, ctx: Context, sha: str, file: str, image_tag: str | None,
                   choice: str | None = None) -> FilePlan:
        """Resolve `file` at commit `sha` from the PR's tree, read as data; `choice`: the backend or
        stage the command named."""
        tree = self.api.get(f"/repos/{ctx.repository}/git/trees/{sha}", {"recursive": "1"}) or {}
        if tree.get("truncated"):
            raise InputError("the pull request's tree is too large to read through the API", path=file)
        entries = {e.get("path"): e for e in tree.get("tree", []) if isinstance(e, dict)}
        needed = [(self.config.labels_file, "labels file"), (file, "test file")]
        if self.config.estimates_file:
            needed.append((self.config.estimates_file, "estimates file"))
        with tempfile.TemporaryDirectory(prefix="ci-policy-rerun-") as tmp:
            for path, what in needed:
                parts = path.split("/")
                for i in range(1, len(parts) + 1):
                    prefix = "/".join(parts[:i])
                    entry = entries.get(prefix)
                    if entry is None:
                        raise InputError(f"{what} {path} does not exist at {sha[:12]}", path=path)
                    if entry.get("mode") == SYMLINK_MODE:
                        shown = path if prefix == path else f"{path}: directory {prefix}"
                        raise InputError(f"{what} {shown} is a symlink; ci-policy refuses symlinks in a checkout",
                                          path=path)
                if entries[path].get("type") != "blob":  # a directory or a submodule
                    raise InputError(f"{what} {path} is not a regular file", path=path)
                size = entries[path].get("size")
                if not isinstance(size, int) or size > MAX_FILE_BYTES:
                    raise InputError(f"{what} {path} is larger than {MAX_FILE_BYTES} bytes (or of unknown size)",
                                      path=path)
                blob = self.api.get(f"/repos/{ctx.repository}/git/blobs/{entries[path]['sha']}")
                data = base64.b64decode((blob or {}).get("content", ""), validate=False)
                target = Path(tmp, path)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            # The choice names a stage of the trusted configuration, else a backend.
            is_stage = choice is not None and (self.config.stage(choice) is not None
                                               or any(s.name == choice for s in self.config.stages))
            return resolve_file(file, Path(tmp), config_path=self.config_path, image_tag=image_tag,
                                stage=choice if is_stage else None,
                                backend=choice if choice is not None and not is_stage else None)

    def find_run(self, ctx: Context, workflow: str, name: str) -> str:
        page = f"https://github.com/{ctx.repository}/actions/workflows/{workflow}"
        if self.api.dry_run:
            return page
        for attempt in range(self.poll_attempts):
            runs = self.api.get(f"/repos/{ctx.repository}/actions/workflows/{workflow}/runs",
                                {"event": "workflow_dispatch", "per_page": 20}) or {}
            for run in runs.get("workflow_runs") or []:
                if run.get("display_title") == name and isinstance(run.get("html_url"), str):
                    return run["html_url"]
            if attempt + 1 < self.poll_attempts:
                self.poll(2.0)
        return page


def as_code(text: str, limit: int = 500) -> str:
    """Untrusted text as one inline code span: no Markdown, links or mentions."""
    flat = " ".join(text.split()).replace("`", "'")
    return "`" + (flat[:limit] + ("..." if len(flat) > limit else "")) + "`"


def run_name(pull_number: int, file: str, sha: str) -> str:
    """The dispatched run's `run-name` (the caller's `run-name` builds the same string for a /rerun-test dispatch)."""
    return f"rerun {file} for #{pull_number} at {sha}"


def pin_input(name: str) -> str:
    return name[len("ci-"):].replace("-", "_")


def pins_from_body(body: str, pins: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """`ci-image-tag: TAG` and configured `ci-<pin>: VALUE` lines of the PR body, validated."""
    patterns = {"ci-image-tag": IMAGE_TAG_RE.pattern, **dict(pins)}
    found: dict[str, str] = {}
    for line in body.splitlines():
        # The whole rest of the line is the value: `ci-sglang-pr: 12 && curl ...` is an invalid
        # pin, not a line that silently pins nothing.
        m = re.match(r"\s*(ci-[a-z0-9-]+):(.*)$", line)
        if not m or m.group(1) not in patterns:
            continue
        name, value = m.group(1), m.group(2).strip(" \t")
        if name in found:
            raise InputError(f"the PR body sets {name} twice", path="PR body")
        if not re.fullmatch(patterns[name], value):
            raise InputError(f"the PR body's {name} value {value[:80]!r} does not match {patterns[name]!r}",
                              path="PR body")
        found[name] = value
    return found
