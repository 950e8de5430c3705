"""Where a diagnostic's path points, seen from the workspace (the current directory).

- In: the --repo and --config arguments.
- Out: a function from a repo-relative path to one relative to the current directory,
  for `::error file=...` annotations; a path outside the workspace stays repo-relative.
- Refused: nothing: a path it cannot make relative is shown as it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def workspace_paths(repo: Path, config: str | None = None) -> Callable[[str], str]:
    """Annotation paths relative to the workspace (the current directory) when possible.

    Error paths are repo-relative, except two that are already relative to the current
    directory (or absolute): the --repo argument itself and a --config file outside the
    checkout; those are shown as given.
    """
    as_given = {str(repo)}
    if config is not None:
        try:
            Path(config).resolve().relative_to(repo.resolve())
        except (OSError, ValueError):
            as_given.add(str(config))

    def convert(path: str) -> str:
        if Path(path).is_absolute() or path in as_given:
            return path
        try:
            rel = os.path.relpath(repo / path, Path.cwd())
        except ValueError:
            return path
        return path if rel == ".." or rel.startswith("../") else Path(rel).as_posix()
    return convert
