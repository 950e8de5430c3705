"""`--github-run`: a run's job logs and timing artifacts, through PyGithub (an adapter); and
`history import --github-run(s)`: a run's timing and plan artifacts, extracted for the history.

- In: `OWNER/REPO/RUN_ID` or a run URL (`https://github.com/OWNER/REPO/actions/runs/ID`,
  optionally `/attempts/N`), a token and the API base URL.
- Out: `FileEvidence` rows: one log per job (`GET .../actions/jobs/{id}/logs`, redirect
  followed; every page of jobs and of artifacts) parsed by `logs.read_log` with the job's
  name (stage and shard), and every `*.jsonl` member of the run's timing artifacts parsed by
  `records.read_records` (a torn last line of a member is a warning citing the member, as for a
  local file).
- `artifacts_of_run`: for `history import`, every timing artifact and plan artifact
  (`ci-policy-plan-<attempt>`: only its top-level `plan.json` and `run.json`) of one run,
  each archive checked by the same rules as below and written under a temporary directory
  (`run-<id>/<artifact>/`, member files under names of their own); an artifact failing a
  check is skipped whole with a warning.
- Refused: a `--github-run` that is not `OWNER/REPO/RUN_ID` or a run URL (`UsageError`, exit 2);
  an API error is an `InputError` naming the run. What a run holds is never refused whole:
  an artifact or log that is too large or damaged is skipped with a warning, as below.
- Only timing artifacts are downloaded: those whose name starts with `TIMINGS_PREFIX`
  (`ci-policy-timings`, as the workflows upload them), not expired. Test reports, images,
  wheels and the other artifacts of a run are never fetched.
- An artifact over `MAX_ARCHIVE_BYTES` (by its listed `size_in_bytes`, or by what its download
  turns out to be) and a job log over `MAX_MEMBER_BYTES` are skipped with a warning appended to
  `warnings`; the run's other logs and artifacts are still read.
- `progress`, when given, is called with a `Step` before each job log and each artifact is
  downloaded (the command line shows it).
- Zip members are streamed, one at a time, with a running byte budget: a member is
  counted by the bytes it really expands to (never its declared size) against
  `MAX_MEMBER_BYTES`, the archive's total against `tune.archive_max_bytes`, and the run's
  artifacts together against `tune.run_max_bytes`; each member passes through one
  temporary file that is deleted before the next is read. Member names are never paths.
- Every archive problem (not a zip, truncated, a bad CRC, a false size, encrypted
  members, an unsupported compression such as deflate64, too many members, members that
  overlap, a member that expands more than `MAX_RATIO` times its compressed size once past
  `RATIO_FLOOR_BYTES`, a budget exceeded: a zip bomb; a symbolic-link member; malformed or
  forged records in a member) skips that whole archive (none of its rows are used) with a
  warning naming the artifact and the member (and the first bad line), appended to
  `warnings`; the run's other archives and job logs are read; never a traceback. Members
  that are not `*.jsonl` (a nested zip) are never opened.
- The redirects to blob storage are followed here, not by PyGithub (which refuses hosts
  outside github.com/githubusercontent.com with an AssertionError), and never carry the
  token: the Location is a signed URL.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from github import GithubException

from ci_policy.adapters.github import client
from ci_policy.adapters.github.client import Throttle, github_requester
from ci_policy.adapters.tuning import logs, records
from ci_policy.adapters.tuning.evidence import FileEvidence
from ci_policy.errors import CiPolicyError, Diagnostic, InputError, InputErrors, UsageError, warning

RUN_RE = re.compile(r"(?:https?://[^/]+/)?(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)"
                    r"(?:/actions/runs)?/(?P<run>[0-9]+)(?:/attempts/[0-9]+)?/?")
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024  # one artifact's download (compressed)
MAX_MEMBER_BYTES = 64 * 1024 * 1024  # one member, expanded; also one job log
MAX_MEMBERS = 10_000
# Timing records compress about 10:1; deflate's ceiling is about 1032:1. A member expanding
# more than MAX_RATIO times its compressed size is a bomb, once it is past RATIO_FLOOR_BYTES
# (a tiny member of repeated lines may compress better than that honestly).
MAX_RATIO = 100
RATIO_FLOOR_BYTES = 1024 * 1024
# The problems of one member's records listed in its warning; the rest are counted.
SHOWN_RECORD_ERRORS = 3
CHUNK = 64 * 1024
# What zipfile and zlib raise for a damaged, encrypted or unsupported archive.
ARCHIVE_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError,
                  zlib.error, ValueError, OSError)


TIMINGS_PREFIX = "ci-policy-timings"
# The plan job's artifact (`ci-policy-plan-<run attempt>`, see `adapters.plan_history`) and what of it is read.
PLAN_ARTIFACT = re.compile(r"ci-policy-plan-[1-9][0-9]{0,8}")
PLAN_MEMBERS = ("plan.json", "run.json")


class ArchiveSkipped(CiPolicyError):
    """An archive that is not read; the message says why, `member` and `line` where (a member's
    citation and its first bad line, for malformed records)."""

    def __init__(self, message: str, *, member: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.member = member
        self.line = line


class TooLarge(InputError):
    """A download larger than its cap."""


@dataclass(frozen=True)
class Step:
    """One download of a run: job log `index` of `count` (kind "log") or timing artifact (kind
    "artifact", with its listed size in bytes)."""

    run_id: int
    kind: str
    index: int
    count: int
    name: str
    size: int | None = None


@dataclass
class ExpansionBudget:
    """The bytes archives may still expand to: per archive, and for the run's archives together."""

    archive_max_bytes: int = 256 * 1024 * 1024
    run_max_bytes: int = 1024 * 1024 * 1024
    run_used: int = field(default=0)


def parse_run(text: str) -> tuple[str, int]:
    m = RUN_RE.fullmatch(text.strip())
    if not m or any(part in (".", "..") for part in m.group("repo").split("/")):
        raise UsageError(f"{text!r} is not OWNER/REPO/RUN_ID or a run URL", source="--github-run",
                         hint="e.g. org/repo/123456789 or https://github.com/org/repo/actions/runs/123456789")
    return m.group("repo"), int(m.group("run"))


def _get_bytes(requester, path: str, limit: int) -> bytes:
    """The bytes `path` redirects to. The storage download is retried as the API calls are
    (`client`): a 5xx or 429 answer or a lost connection, at most `client.MAX_ATTEMPTS` attempts,
    after 0 s, 2 s, 4 s, 8 s (a 429's `Retry-After` when it gives one), at most `client.max_wait()`
    seconds of waiting in all; each retry one `client.NOTICE` line, never the signed URL."""
    headers, _data = requester.requestJsonAndCheck("GET", path)  # 302: not followed by PyGithub
    location = headers.get("location")
    if not location:
        raise InputError(f"{path}: GitHub answered without a redirect to the download")
    limit_wait, waited = client.max_wait(), 0.0
    for attempt in range(1, client.MAX_ATTEMPTS + 1):
        out = bytearray()
        try:
            # A signed URL: no token, and no ~/.netrc credentials either (a no-op auth).
            with requests.get(location, stream=True, timeout=60, auth=lambda r: r) as response:
                response.raise_for_status()
                for chunk in response.iter_content(chunk_size=65536):
                    out += chunk
                    if len(out) > limit:
                        raise TooLarge(f"{path}: download larger than {limit} bytes")
            return bytes(out)
        except requests.RequestException as exc:  # never shown: the signed URL
            status = exc.response.status_code if exc.response is not None else None
            what = f"answered HTTP {status}" if status is not None else f"failed ({type(exc).__name__})"
            failure = InputError(f"{path}: the download it redirects to {what}"
                                 + (f" after {attempt} attempts" if attempt > 1 else ""))
            if (status is not None and status < 500 and status != 429) or attempt == client.MAX_ATTEMPTS:
                raise failure from None
            wait = _retry_after(exc.response) if status == 429 else None
            wait = wait if wait is not None else (0.0 if attempt == 1 else client.BACKOFF_FACTOR * 2 ** (attempt - 1))
            if waited + wait > limit_wait:
                raise failure from None
            client.NOTICE(f"ci-policy: the storage download of GET {path} {what}; attempt {attempt + 1} of "
                          f"{client.MAX_ATTEMPTS} " + (f"after {wait:g}s" if wait > 0 else "now"))
            if wait > 0:
                client.SLEEP(wait)
                waited += wait
    raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover


def _retry_after(response) -> float | None:
    """A 429's `Retry-After` in seconds (a number of at most 3600), else None."""
    text = (response.headers.get("Retry-After") or "").strip() if response is not None else ""
    return float(text) if text.isdigit() and int(text) <= 3600 else None


def _pages(requester, path: str, key: str, parameters: dict) -> list:
    items: list = []
    page = 1
    while True:
        _h, data = requester.requestJsonAndCheck("GET", path, parameters={**parameters, "per_page": 100,
                                                                          "page": page})
        batch = data.get(key) or []
        items += batch
        if len(batch) < 100 or len(items) >= int(data.get("total_count", 0)):
            return items
        page += 1


def download_run(spec: str, token: str, base_url: str, *, throttle: Throttle | None = None,
                 archive_max_bytes: int = 256 * 1024 * 1024, run_max_bytes: int = 1024 * 1024 * 1024,
                 warnings: list[Diagnostic] | None = None,
                 progress: Callable[[Step], None] | None = None) -> list[FileEvidence]:
    """Every row of the run `spec`; `throttle` None keeps PyGithub's pauses (see `client`);
    each archive or log skipped is a warning appended to `warnings`; `progress` sees each download."""
    repo_name, run_id = parse_run(spec)
    requester = github_requester(token, base_url, timeout=60, throttle=throttle)
    rows: list[FileEvidence] = []
    budget = ExpansionBudget(archive_max_bytes=archive_max_bytes, run_max_bytes=run_max_bytes)
    skipped = warnings if warnings is not None else []
    step = progress or (lambda _step: None)
    try:
        jobs = _pages(requester, f"/repos/{repo_name}/actions/runs/{run_id}/jobs", "jobs", {"filter": "all"})
        for index, job in enumerate(jobs, 1):
            job_id, job_name = str(job["id"]), str(job.get("name", ""))
            step(Step(run_id, "log", index, len(jobs), job_name))
            try:
                data = _get_bytes(requester, f"/repos/{repo_name}/actions/jobs/{job_id}/logs", MAX_MEMBER_BYTES)
            except TooLarge:
                skipped.append(warning(f"job log of {job_name!r} of run {run_id} skipped: larger than "
                                       f"{MAX_MEMBER_BYTES} bytes", path=f"{repo_name}/runs/{run_id}/jobs/{job_id}",
                                       hint="none of its timings are used; the run's other job logs and "
                                            "artifacts are"))
                continue
            rows += logs.read_log(data.decode("utf-8", "replace"), source=f"{repo_name}/runs/{run_id}/jobs/{job_id}",
                             run_id=str(run_id), job_id=job_id, job_name=job_name)
        artifacts = [a for a in _pages(requester, f"/repos/{repo_name}/actions/runs/{run_id}/artifacts",
                                       "artifacts", {})
                     if not a.get("expired") and str(a.get("name", "")).startswith(TIMINGS_PREFIX)]
        for index, artifact in enumerate(artifacts, 1):
            name = str(artifact.get("name", ""))
            cite = f"{repo_name}/runs/{run_id}/artifacts/{name}"
            listed = artifact.get("size_in_bytes")
            size = listed if isinstance(listed, int) and not isinstance(listed, bool) else None
            if size is not None and size > MAX_ARCHIVE_BYTES:
                skipped.append(_over_cap(name, run_id, cite, f"{size} bytes"))
                continue
            step(Step(run_id, "artifact", index, len(artifacts), name, size))
            try:
                blob = _get_bytes(requester, f"/repos/{repo_name}/actions/artifacts/{int(artifact['id'])}/zip",
                                  MAX_ARCHIVE_BYTES)
            except TooLarge:
                skipped.append(_over_cap(name, run_id, cite, "its download"))
                continue
            try:
                rows += _records_of_archive(blob, repo_name, run_id, name, records.read_records, budget, warnings)
            except ArchiveSkipped as exc:
                skipped.append(warning(f"artifact {name!r} of run {run_id} skipped: {exc}", path=exc.member or cite,
                                       line=exc.line,
                                       hint="none of its timing records are used; the run's other "
                                            "artifacts and job logs are"))
    except GithubException as exc:
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        raise InputError(f"GitHub API error {exc.status} while reading run {run_id} of {repo_name}: "
                          f"{message or 'request failed'}") from None
    return rows


def _over_cap(name: str, run_id: int, cite: str, what: str, *, history: bool = False) -> Diagnostic:
    return warning(f"artifact {name!r} of run {run_id} skipped: {what} is over the {MAX_ARCHIVE_BYTES}-byte cap "
                   "of one artifact download", path=cite,
                   hint="none of it is imported; the run's other artifacts are" if history else
                   "none of its timing records are used; the run's other artifacts and job logs are")


def _records_of_archive(blob: bytes, repo_name: str, run_id: int, name: str, read_records,
                        budget: ExpansionBudget | None = None,
                        warnings: list[Diagnostic] | None = None) -> list[FileEvidence]:
    """The rows of every `*.jsonl` member; raises `ArchiveSkipped` for any archive problem; a
    torn last line of a member is a warning citing the member, appended to `warnings`."""
    budget = budget if budget is not None else ExpansionBudget()
    try:
        archive = zipfile.ZipFile(io.BytesIO(blob))
        # A member without a name is no timing file (zipfile's `is_dir` would index its empty name).
        members = [i for i in archive.infolist() if i.filename.endswith(".jsonl") and not i.is_dir()]
    except ARCHIVE_ERRORS as exc:
        raise ArchiveSkipped(f"not a readable zip archive ({_reason(exc)})") from None
    if len(archive.infolist()) > MAX_MEMBERS:
        raise ArchiveSkipped(f"more than {MAX_MEMBERS} members")
    _refuse_overlaps(archive.infolist())
    rows: list[FileEvidence] = []
    expanded = 0
    with tempfile.TemporaryDirectory(prefix="ci-policy-tune-") as tmp:
        local = Path(tmp, "member.jsonl")  # never the member's own name; one member at a time
        for info in members:
            member = _shown_name(info.filename)
            if info.flag_bits & 0x1:
                raise ArchiveSkipped(f"member {member} is encrypted")
            if stat.S_ISLNK(info.external_attr >> 16):
                # Never created as a link (members are data), but a link member is no record file.
                raise ArchiveSkipped(f"member {member} is a symbolic link")
            try:
                size = _expand(archive, info, local, member, name, expanded, budget)
            except ARCHIVE_ERRORS as exc:
                raise ArchiveSkipped(f"member {member}: {_reason(exc)}") from None
            expanded += size
            budget.run_used += size
            cite = f"{repo_name}/runs/{run_id}/artifacts/{name}/{info.filename}"
            torn: list[Diagnostic] | None = None if warnings is None else []
            try:
                found = read_records(local, run_id=str(run_id), job_name=name, warnings=torn)
            except InputErrors as exc:  # cite the member, not the temporary file
                raise _malformed(exc.errors, member, cite) from None
            finally:
                local.unlink(missing_ok=True)
            if warnings is not None and torn:
                warnings += [dataclasses.replace(w, path=cite) for w in torn]
            for row in found:
                rows.append(_cite(row, cite))
    return rows


def artifacts_of_run(requester: Any, repo_name: str, run_id: int, dest: Path, *, budget: ExpansionBudget,
                     warnings: list[Diagnostic]) -> dict[str, str]:
    """The timing and plan artifacts of one run extracted under `dest/run-<id>/` (for `history import`):
    each timing artifact's `*.jsonl` members into `ci-policy-timings-<artifact id>/`, each plan
    artifact's (`ci-policy-plan-<attempt>`) top-level `plan.json` and `run.json` into a directory of
    its name; local path (of each artifact's directory and each member) -> what a diagnostic
    cites (`OWNER/REPO/runs/ID/artifacts/NAME`, then `/MEMBER`).
    Every artifact is checked as `tune`'s are (the caps, the members, the expansion budget); one
    that fails a check is skipped whole, with a warning. Raises `GithubException` (the caller
    names the run)."""
    cited: dict[str, str] = {}
    listed = _pages(requester, f"/repos/{repo_name}/actions/runs/{run_id}/artifacts", "artifacts", {})
    for artifact in listed:
        name = str(artifact.get("name", ""))
        plan = PLAN_ARTIFACT.fullmatch(name) is not None
        if artifact.get("expired") or not (plan or name.startswith(TIMINGS_PREFIX)):
            continue
        cite = f"{repo_name}/runs/{run_id}/artifacts/{name}"
        size = artifact.get("size_in_bytes")
        if isinstance(size, int) and not isinstance(size, bool) and size > MAX_ARCHIVE_BYTES:
            warnings.append(_over_cap(name, run_id, cite, f"{size} bytes", history=True))
            continue
        try:
            blob = _get_bytes(requester, f"/repos/{repo_name}/actions/artifacts/{int(artifact['id'])}/zip",
                              MAX_ARCHIVE_BYTES)
        except TooLarge:
            warnings.append(_over_cap(name, run_id, cite, "its download", history=True))
            continue
        # Never a name from the API as a path: a plan artifact's name is checked, a timing artifact's is its id.
        local = dest / f"run-{run_id}" / (name if plan else f"{TIMINGS_PREFIX}-{int(artifact['id'])}")
        try:
            members = _extract(blob, local, budget, PLAN_MEMBERS if plan else None)
        except ArchiveSkipped as exc:
            shutil.rmtree(local, ignore_errors=True)
            warnings.append(warning(f"artifact {name!r} of run {run_id} skipped: {exc}", path=exc.member or cite,
                                    hint="none of it is imported; the run's other artifacts are"))
            continue
        cited[str(local)] = cite
        cited.update({path: f"{cite}/{member}" for path, member in members.items()})
    return cited


def _extract(blob: bytes, local: Path, budget: ExpansionBudget, only: tuple[str, ...] | None) -> dict[str, str]:
    """The archive's `*.jsonl` members (`only`: the top-level members of these names) written into
    `local` under names of their own; local path -> member name. Raises `ArchiveSkipped`."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(blob))
        infos = archive.infolist()
    except ARCHIVE_ERRORS as exc:
        raise ArchiveSkipped(f"not a readable zip archive ({_reason(exc)})") from None
    if len(infos) > MAX_MEMBERS:
        raise ArchiveSkipped(f"more than {MAX_MEMBERS} members")
    _refuse_overlaps(infos)
    wanted = [i for i in infos if not i.is_dir() and (i.filename in only if only is not None
                                                      else i.filename.endswith(".jsonl"))]
    local.mkdir(parents=True, exist_ok=True)
    out: dict[str, str] = {}
    expanded = 0
    for index, info in enumerate(wanted, 1):
        member = _shown_name(info.filename)
        if info.flag_bits & 0x1:
            raise ArchiveSkipped(f"member {member} is encrypted")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise ArchiveSkipped(f"member {member} is a symbolic link")
        path = local / (info.filename if only is not None else f"member-{index}.jsonl")
        try:
            size = _expand(archive, info, path, member, local.name, expanded, budget)
        except ARCHIVE_ERRORS as exc:
            raise ArchiveSkipped(f"member {member}: {_reason(exc)}") from None
        expanded += size
        budget.run_used += size
        out[str(path)] = info.filename
    return out


def _refuse_overlaps(infos: list[zipfile.ZipInfo]) -> None:
    """Members whose data overlap (several directory entries over one stored member: a bomb by
    count that the byte caps would only stop late). A local header is at least 30 bytes and
    the member's name, so a member ends no earlier than that plus its compressed size."""
    ordered = sorted(infos, key=lambda i: i.header_offset)
    for this, after in itertools.pairwise(ordered):
        end = this.header_offset + 30 + len(this.orig_filename.encode("utf-8", "replace")) + this.compress_size
        if end > after.header_offset:
            raise ArchiveSkipped(f"members {_shown_name(this.filename)} and {_shown_name(after.filename)} "
                                 "overlap (a zip bomb)")


def _malformed(errors: tuple[Diagnostic, ...], member: str, cite: str) -> ArchiveSkipped:
    shown = "; ".join(f"line {e.line}: {e.message}" if e.line else e.message
                      for e in errors[:SHOWN_RECORD_ERRORS])
    more = len(errors) - SHOWN_RECORD_ERRORS
    return ArchiveSkipped(f"member {member} has {len(errors)} malformed record(s): {shown}"
                          + (f"; and {more} more" if more > 0 else ""), member=cite,
                          line=errors[0].line if errors else None)


def _expand(archive: zipfile.ZipFile, info: zipfile.ZipInfo, local: Path, member: str, name: str,
            expanded: int, budget: ExpansionBudget) -> int:
    """Stream one member into `local`, counting the bytes it really expands to."""
    size = 0
    with archive.open(info) as src, open(local, "wb") as dst:
        while chunk := src.read(CHUNK):
            size += len(chunk)
            if size > MAX_MEMBER_BYTES:
                raise ArchiveSkipped(f"member {member} expands to more than {MAX_MEMBER_BYTES} bytes")
            if expanded + size > budget.archive_max_bytes:
                raise ArchiveSkipped(f"expands to more than tune.archive_max_bytes ({budget.archive_max_bytes} "
                                     f"bytes) at member {member}")
            if budget.run_used + size > budget.run_max_bytes:
                raise ArchiveSkipped(f"the run's archives expand to more than tune.run_max_bytes "
                                     f"({budget.run_max_bytes} bytes) at member {member}")
            if size > RATIO_FLOOR_BYTES and size > MAX_RATIO * max(info.compress_size, 1):
                raise ArchiveSkipped(f"member {member} expands to more than {MAX_RATIO} times its "
                                     f"{info.compress_size} compressed bytes (a zip bomb)")
            dst.write(chunk)
    return size


def shown_name(name: str) -> str:
    """A name from the API or an archive, quoted, printable and at most 80 characters."""
    return _shown_name(name)


def _shown_name(name: str) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in name)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, NotImplementedError):
        return f"unsupported ({exc})"
    if isinstance(exc, RuntimeError) and "encrypted" in str(exc):
        return "encrypted"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def _cite(row: FileEvidence, source: str) -> FileEvidence:
    return dataclasses.replace(row, source=source)
