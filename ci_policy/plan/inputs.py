"""A plan's `inputs`: the content ids it was built from, as the plan JSON records them.

- In: the content ids of the configuration, the labels file (None: there is none) and every
  discovered test file, and the git tree the checkout exactly was (None: not a git work
  tree, or one with changes, see `adapters.git.clean_tree`).
- Out: `inputs_dict(config_id, labels_id, files, tree)`: the plan JSON's `inputs` object
  (`plan.document.InputsDoc`), with `digest`, `sha256:` of the canonical JSON
  (`canonical_json`: sorted keys, no spaces, UTF-8) of the other four; `Inputs`: the same
  ids as a checkout's (`adapters.inputs`) or a plan file's (`plan.planfile`) are compared.
- Kept apart from `plan.planfile`, which reads a plan file back (and a per-stage plan's
  settings, `plan.stagejob`): the plan job writes inputs and reads no plan file.
- Refused: nothing: the ids were computed by the caller.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ci_policy.plan.document import InputsDoc
from ci_policy.read.codec import encode


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def inputs_dict(config_id: str | None, labels_id: str | None, files: Mapping[str, str],
                tree: str | None = None) -> dict[str, Any]:
    """The plan JSON's `inputs`: the content ids, the checkout's clean tree, and their digest."""
    body: dict[str, Any] = {"config": config_id, "labels": labels_id, "files": dict(sorted(files.items())),
                            "tree": tree}
    digest = "sha256:" + hashlib.sha256(canonical_json(body)).hexdigest()
    data: dict[str, Any] = encode(InputsDoc(**body, digest=digest))
    return data


@dataclass(frozen=True)
class Inputs:
    config: str | None
    labels: str | None
    files: tuple[tuple[str, str], ...]
    # The git tree the checkout exactly was (`adapters.git.clean_tree`): a stage job whose
    # checkout is that same clean tree has the same files, so it need not list them.
    tree: str | None = None
