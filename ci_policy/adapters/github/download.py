"""`--github-run`: a run's job logs and timing artifacts, through PyGithub (an adapter).

- In: `OWNER/REPO/RUN_ID` or a run URL (`https://github.com/OWNER/REPO/actions/runs/ID`,
  optionally `/attempts/N`), a token and the API base URL.
- Out: `FileEvidence` rows: one log per job (`GET .../actions/jobs/{id}/logs`, redirect
  followed; every page of jobs and of artifacts) parsed by `logs.read_log` with the job's
  name (stage and shard), and every `*.jsonl` member of the run's artifacts parsed by `records.read_records`
  (a torn last line of a member is a warning citing the member, as for a local file).
- Zip members are read as bytes; their names are never used as paths.
- The redirects to blob storage are followed here, not by PyGithub (which refuses hosts
  outside github.com/githubusercontent.com with an AssertionError), and never carry the
  token: the Location is a signed URL.
"""

from __future__ import annotations

import dataclasses
import io
import re
import tempfile
import zipfile
from pathlib import Path

from ci_policy.adapters.github.client import Throttle, github_requester
from ci_policy.adapters.tuning.evidence import FileEvidence
from ci_policy.errors import Diagnostic, InputError, InputErrors, UsageError

RUN_RE = re.compile(r"(?:https?://[^/]+/)?(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)"
                    r"(?:/actions/runs)?/(?P<run>[0-9]+)(?:/attempts/[0-9]+)?/?")
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024
MAX_MEMBER_BYTES = 64 * 1024 * 1024


def parse_run(text: str) -> tuple[str, int]:
    m = RUN_RE.fullmatch(text.strip())
    if not m or any(part in (".", "..") for part in m.group("repo").split("/")):
        raise UsageError(f"{text!r} is not OWNER/REPO/RUN_ID or a run URL", source="--github-run",
                         hint="e.g. org/repo/123456789 or https://github.com/org/repo/actions/runs/123456789")
    return m.group("repo"), int(m.group("run"))


def _get_bytes(requester, path: str, limit: int) -> bytes:
    import requests

    headers, _data = requester.requestJsonAndCheck("GET", path)  # 302: not followed by PyGithub
    location = headers.get("location")
    if not location:
        raise InputError(f"{path}: GitHub answered without a redirect to the download")
    out = bytearray()
    try:
        # A signed URL: no token, and no ~/.netrc credentials either (a no-op auth).
        with requests.get(location, stream=True, timeout=60, auth=lambda r: r) as response:
            response.raise_for_status()
            for chunk in response.iter_content(chunk_size=65536):
                out += chunk
                if len(out) > limit:
                    raise InputError(f"{path}: download larger than {limit} bytes")
    except requests.RequestException as exc:  # never shown: the signed URL
        what = (f"answered HTTP {exc.response.status_code}" if exc.response is not None
                else f"failed ({type(exc).__name__})")
        raise InputError(f"{path}: the download it redirects to {what}") from None
    return bytes(out)


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
                 warnings: list[Diagnostic] | None = None) -> list[FileEvidence]:
    """Every row of the run `spec`; `throttle` None keeps PyGithub's pauses (see `client`); a torn
    last line of a timing file is a warning into `warnings`, when given (see `records.py`)."""
    from github import GithubException

    from ci_policy.adapters.tuning.logs import read_log
    from ci_policy.adapters.tuning.records import read_records

    repo_name, run_id = parse_run(spec)
    requester = github_requester(token, base_url, timeout=60, throttle=throttle)
    rows: list[FileEvidence] = []
    try:
        jobs = _pages(requester, f"/repos/{repo_name}/actions/runs/{run_id}/jobs", "jobs", {"filter": "all"})
        for job in jobs:
            job_id, job_name = str(job["id"]), str(job.get("name", ""))
            data = _get_bytes(requester, f"/repos/{repo_name}/actions/jobs/{job_id}/logs", MAX_MEMBER_BYTES)
            rows += read_log(data.decode("utf-8", "replace"), source=f"{repo_name}/runs/{run_id}/jobs/{job_id}",
                             run_id=str(run_id), job_id=job_id, job_name=job_name)
        artifacts = _pages(requester, f"/repos/{repo_name}/actions/runs/{run_id}/artifacts", "artifacts", {})
        for artifact in artifacts:
            if artifact.get("expired"):
                continue
            blob = _get_bytes(requester, f"/repos/{repo_name}/actions/artifacts/{int(artifact['id'])}/zip",
                              MAX_ARCHIVE_BYTES)
            rows += _records_of_archive(blob, repo_name, run_id, str(artifact.get("name", "")), read_records,
                                        warnings)
    except GithubException as exc:
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        raise InputError(f"GitHub API error {exc.status} while reading run {run_id} of {repo_name}: "
                          f"{message or 'request failed'}") from None
    return rows


def _records_of_archive(blob: bytes, repo_name: str, run_id: int, name: str, read_records,
                        warnings: list[Diagnostic] | None = None) -> list[FileEvidence]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(blob))
    except zipfile.BadZipFile:
        raise InputError(f"artifact {name!r} of run {run_id} is not a zip archive") from None
    rows = []
    with tempfile.TemporaryDirectory(prefix="ci-policy-tune-") as tmp:
        for i, info in enumerate(archive.infolist()):
            if info.is_dir() or not info.filename.endswith(".jsonl"):
                continue
            if info.file_size > MAX_MEMBER_BYTES:
                raise InputError(f"artifact {name!r}: {info.filename} is too large")
            local = Path(tmp, f"member-{i}.jsonl")  # never the member's own name
            local.write_bytes(archive.read(info))
            cite = f"{repo_name}/runs/{run_id}/artifacts/{name}/{info.filename}"
            torn: list[Diagnostic] | None = None if warnings is None else []
            try:
                found = read_records(local, run_id=str(run_id), job_name=name, warnings=torn)
            except InputErrors as exc:  # cite the member, not the temporary file
                raise InputErrors([InputError(e.message, path=cite, line=e.line, col=e.col, hint=e.hint)
                                    for e in exc.errors]) from None
            if warnings is not None and torn:
                warnings += [dataclasses.replace(warning, path=cite) for warning in torn]
            for row in found:
                rows.append(_cite(row, cite))
    return rows


def _cite(row: FileEvidence, source: str) -> FileEvidence:
    return dataclasses.replace(row, source=source)
