"""The content ids a plan records and `--plan` checks (an adapter: it reads files and may run git).

- In: the checkout root, the `--config` argument as given (None: the default inside the
  checkout), the labels file's repo-relative path, and the discovered test files.
- Out: `plan.inputs.Inputs`: the content id of the configuration, of the labels file
  (None when there is none), and of each test file, from `adapters.git.content_ids`. A
  configuration outside the checkout (a trusted copy of the base commit's) is hashed
  directly: `sha256:<hex>` of its bytes.
- Refused: nothing raised: a symlink inside the checkout is never followed and gets no id
  (`content_ids`).
- `unchanged_since(repo, config_arg, recorded)`: True when the checkout is exactly the clean
  git tree the plan recorded (`recorded.tree`, see `adapters.git.clean_tree`) and the
  configuration `--config` names (inside the checkout or outside) still has the recorded
  content id (`why_changed`: else why not): then the plan's
  `inputs` are the checkout's, with no listing, discovery or hashing of test files. The
  caller may pass the `adapters.git.CleanTree` it started earlier (else one starts here).
- `index`: the checkout's git listing when the caller already made it
  (`adapters.git.checkout_index`, None outside a git work tree), so that one command runs
  `git ls-files` once; by default it is made here.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import EllipsisType
from typing import TYPE_CHECKING

from ci_policy.adapters.git import CleanTree, blob_id, checkout_index, ids_from_index, sha256_id
from ci_policy.config.path import DEFAULT_CONFIG
from ci_policy.plan.inputs import Inputs

if TYPE_CHECKING:
    from ci_policy.model.discovery import IndexEntry

    Listing = Mapping[str, IndexEntry] | None | EllipsisType


def config_location(repo: Path, config_arg: str | Path | None) -> tuple[str, Path | None]:
    """(the configuration's name as errors show it, its absolute path when outside the checkout).

    Inside the checkout the name is its repo-relative path, as `config.load` decides it.
    """
    if config_arg is None:
        return DEFAULT_CONFIG, None
    absolute = Path(os.path.abspath(config_arg))
    top = repo.resolve()
    for parent in absolute.parents:
        try:
            if parent.resolve() == top:
                return absolute.relative_to(parent).as_posix(), None
        except (OSError, RuntimeError):
            continue
    return str(config_arg), absolute


def _sha256_file(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            return "sha256:" + hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def _listing(repo: Path, index: Listing) -> Mapping[str, IndexEntry] | None:
    return checkout_index(repo) if isinstance(index, EllipsisType) else index


def config_id(repo: Path, config_arg: str | Path | None, index: Listing = ...) -> tuple[str, str | None]:
    """The configuration's name and content id (None: it cannot be read), read without parsing it."""
    name, outside = config_location(repo, config_arg)
    if outside is not None:
        return name, _sha256_file(outside)
    return name, ids_from_index(repo, _listing(repo, index), [name]).get(name)


def unchanged_since(repo: Path, config_arg: str | Path | None, recorded: Inputs,
                    tree: CleanTree | None = None) -> bool:
    return why_changed(repo, config_arg, recorded, tree) is None


def why_changed(repo: Path, config_arg: str | Path | None, recorded: Inputs,
                tree: CleanTree | None = None) -> str | None:
    """None when `unchanged_since` holds; else why not, in the words a refusal prints."""
    if recorded.tree is None or (tree if tree is not None else CleanTree(repo)).result() != recorded.tree:
        return "the checkout is not the clean git tree it was planned on"
    name, outside = config_location(repo, config_arg)
    # Outside the checkout the configuration is hashed. Inside, the tree holds it, but which
    # file of the tree `--config` names is not part of the tree: its id is compared too, in
    # the form the plan recorded (a blob id, or SHA-256 in a SHA-256 repository).
    if outside is not None:
        current = _sha256_file(outside)
    else:
        current = (blob_id if (recorded.config or "").startswith("git:") else sha256_id)(repo, name)
    if current != recorded.config:
        return f"the configuration {name} is not the one it was planned with"
    return None


def checkout_inputs(repo: Path, config_arg: str | Path | None, labels_file: str, files: Iterable[str],
                    index: Listing = ...) -> Inputs:
    files = list(files)
    listing = _listing(repo, index)
    ids = ids_from_index(repo, listing, [labels_file, *files])
    return Inputs(config=config_id(repo, config_arg, listing)[1], labels=ids.get(labels_file),
                  files=tuple(sorted((f, ids[f]) for f in files if f in ids)))
