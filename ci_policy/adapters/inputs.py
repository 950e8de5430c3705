"""The content ids a plan records and `--plan` checks (an adapter: it reads files and may run git).

- In: the checkout root, the `--config` argument as given (None: the default inside the
  checkout) with the configuration's display path, the labels file's repo-relative path,
  and the discovered test files.
- Out: `plan.planfile.Inputs`: the content id of the configuration, of the labels file
  (None when there is none), and of each test file, from `adapters.git.content_ids`. A
  configuration outside the checkout (a trusted copy of the base commit's) is hashed
  directly: `sha256:<hex>` of its bytes.
- Never follows a symlink inside the checkout (`content_ids` gives a symlink no id).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from ci_policy.adapters.git import content_ids
from ci_policy.plan.planfile import Inputs


def _outside_config(repo: Path, config_arg: str | Path | None) -> Path | None:
    """The configuration's absolute path when it lies outside the checkout (as `config.load` decides)."""
    if config_arg is None:
        return None
    absolute = Path(os.path.abspath(config_arg))
    top = repo.resolve()
    for parent in absolute.parents:
        try:
            if parent.resolve() == top:
                return None
        except (OSError, RuntimeError):
            continue
    return absolute


def _sha256_file(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            return "sha256:" + hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def config_id(repo: Path, config_arg: str | Path | None, config_path: str) -> str | None:
    """The configuration's content id; `config_path` is its repo-relative path when inside the checkout."""
    outside = _outside_config(repo, config_arg)
    if outside is not None:
        return _sha256_file(outside)
    return content_ids(repo, [config_path]).get(config_path)


def checkout_inputs(repo: Path, config_arg: str | Path | None, config_path: str, labels_file: str,
                    files: Iterable[str]) -> Inputs:
    files = list(files)
    ids = content_ids(repo, [labels_file, *files])
    return Inputs(config=config_id(repo, config_arg, config_path), labels=ids.get(labels_file),
                  files=tuple(sorted((f, ids[f]) for f in files if f in ids)))
