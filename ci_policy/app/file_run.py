"""`file-run`: where `/rerun-test` runs one test file of a checkout.

- In: a `FileRunRequest`: the checkout, the trusted configuration, the file, the backend or
  stage, the image tag, how to scan (no cache without `--cache`).
- Out: the `FilePlan` (`plan.filerun`): the stage, runner labels, image and timeout.
  `test_path` and `image_tag` check the values before the checkout is read.
- Refused: a file no stage may run (exit 1, located, with a hint); a path that is not a test
  path or a tag that is not one (`InputError`, from the checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ci_policy.app.requests import ScanRequest
from ci_policy.app.scanning import scan_cache
from ci_policy.plan.filerun import FilePlan, check_image_tag, check_test_path, resolve_file

test_path = check_test_path
image_tag = check_image_tag


@dataclass(frozen=True)
class FileRunRequest:
    repo: Path
    config: str | None
    file: str
    scan: ScanRequest
    image_tag: str | None = None
    backend: str | None = None
    stage: str | None = None


def file_run(request: FileRunRequest) -> FilePlan:
    return resolve_file(request.file, request.repo, config_path=request.config, image_tag=request.image_tag,
                        backend=request.backend, stage=request.stage, cache=scan_cache(request.scan))
