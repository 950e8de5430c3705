"""`--github-run`: a run's job logs and timing artifacts, through PyGithub (an adapter).

- In: `OWNER/REPO/RUN_ID` or a run URL (`https://github.com/OWNER/REPO/actions/runs/ID`,
  optionally `/attempts/N`), a token and the API base URL.
- Out: `FileEvidence` rows: one log per job (`GET .../actions/jobs/{id}/logs`, redirect
  followed) parsed by `logs.read_log` with the job's name (stage and shard), and every
  `*.jsonl` member of the run's artifacts parsed by `records.read_records`.
- Zip members are read as bytes; their names are never used as paths.
"""

from __future__ import annotations

import io
import re
import tempfile
import zipfile
from pathlib import Path

from ..errors import PolicyError
from .evidence import FileEvidence

RUN_RE = re.compile(r"(?:https?://[^/]+/)?(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)"
                    r"(?:/actions/runs)?/(?P<run>[0-9]+)(?:/attempts/[0-9]+)?/?")
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024
MAX_MEMBER_BYTES = 64 * 1024 * 1024


def parse_run(text: str) -> tuple[str, int]:
    m = RUN_RE.fullmatch(text.strip())
    if not m:
        raise PolicyError(f"{text!r} is not OWNER/REPO/RUN_ID or a run URL", path="--github-run",
                          hint="e.g. org/repo/123456789 or https://github.com/org/repo/actions/runs/123456789")
    return m.group("repo"), int(m.group("run"))


def _get_bytes(requester, path: str, limit: int) -> bytes:
    _status, _headers, chunks = requester.getStream(path, chunk_size=65536)
    out = bytearray()
    for chunk in chunks:
        out += chunk
        if len(out) > limit:
            raise PolicyError(f"{path}: download larger than {limit} bytes", path="--github-run")
    return bytes(out)


def download_run(spec: str, token: str, base_url: str) -> list[FileEvidence]:
    from github import Auth, Github, GithubException

    from .logs import read_log
    from .records import read_records

    repo_name, run_id = parse_run(spec)
    gh = Github(auth=Auth.Token(token), base_url=base_url, retry=None, timeout=60)
    requester = gh.requester
    rows: list[FileEvidence] = []
    try:
        _h, jobs = requester.requestJsonAndCheck("GET", f"/repos/{repo_name}/actions/runs/{run_id}/jobs",
                                                 parameters={"per_page": 100, "filter": "all"})
        for job in jobs.get("jobs", []):
            job_id, job_name = str(job["id"]), str(job.get("name", ""))
            data = _get_bytes(requester, f"/repos/{repo_name}/actions/jobs/{job_id}/logs", MAX_MEMBER_BYTES)
            rows += read_log(data.decode("utf-8", "replace"), source=f"{repo_name}/runs/{run_id}/jobs/{job_id}",
                             run_id=str(run_id), job_id=job_id, job_name=job_name)
        _h, artifacts = requester.requestJsonAndCheck(
            "GET", f"/repos/{repo_name}/actions/runs/{run_id}/artifacts", parameters={"per_page": 100})
        for artifact in artifacts.get("artifacts", []):
            if artifact.get("expired"):
                continue
            blob = _get_bytes(requester, f"/repos/{repo_name}/actions/artifacts/{int(artifact['id'])}/zip",
                              MAX_ARCHIVE_BYTES)
            rows += _records_of_archive(blob, repo_name, run_id, str(artifact.get("name", "")), read_records)
    except GithubException as exc:
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        raise PolicyError(f"GitHub API error {exc.status} while reading run {run_id} of {repo_name}: "
                          f"{message or 'request failed'}", path="--github-run") from None
    return rows


def _records_of_archive(blob: bytes, repo_name: str, run_id: int, name: str, read_records) -> list[FileEvidence]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(blob))
    except zipfile.BadZipFile:
        raise PolicyError(f"artifact {name!r} of run {run_id} is not a zip archive", path="--github-run") from None
    rows = []
    with tempfile.TemporaryDirectory(prefix="ci-policy-tune-") as tmp:
        for i, info in enumerate(archive.infolist()):
            if info.is_dir() or not info.filename.endswith(".jsonl"):
                continue
            if info.file_size > MAX_MEMBER_BYTES:
                raise PolicyError(f"artifact {name!r}: {info.filename} is too large", path="--github-run")
            local = Path(tmp, f"member-{i}.jsonl")  # never the member's own name
            local.write_bytes(archive.read(info))
            for row in read_records(local, run_id=str(run_id), job_name=name):
                rows.append(_cite(row, f"{repo_name}/runs/{run_id}/artifacts/{name}/{info.filename}"))
    return rows


def _cite(row: FileEvidence, source: str) -> FileEvidence:
    import dataclasses

    return dataclasses.replace(row, source=source)
