"""Reading `.github/ci-policy.yml` (or the file the maintainer names) from disk.

- In: the checkout root and the config path (default `.github/ci-policy.yml`).
- Out: the parsed `Config` (see `ci_policy.config.top.parse_config`).
- Refused: inside the checkout, what `ci_policy.read.checkout` refuses (symlinks on the
  way, non-regular and oversized files, invalid UTF-8); outside it, unreadable,
  oversized and non-UTF-8 files. Inside the checkout such an error keeps the code of every
  checkout read (CP4xx); a file named outside the checkout that cannot be read is CP100.
"""

from __future__ import annotations

import os
from pathlib import Path

from ci_policy.config import codes
from ci_policy.config.path import DEFAULT_CONFIG
from ci_policy.config.top import Config, parse_config
from ci_policy.errors import InputError
from ci_policy.read.checkout import read_text

MAX_CONFIG_BYTES = 1024 * 1024


def load_config(repo: Path, config: str | Path | None = None) -> Config:
    """Read and validate the configuration of the checkout at `repo`."""
    display, text = _read(repo, config)
    return parse_config(text, display)


def _resolves_to(path: Path, target: Path) -> bool:
    try:
        return path.resolve() == target
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop, on older Pythons
        return False


def _unreadable(message: str, display: str) -> InputError:
    return InputError(message, path=display, code=codes.UNREADABLE)


def _read_checkout_file(repo: Path, rel: str) -> str:
    # A file of the checkout: its read problems keep the codes of every checkout read (CP4xx).
    return read_text(repo, rel, what="configuration file", max_bytes=MAX_CONFIG_BYTES)


def _read(repo: Path, config: str | Path | None) -> tuple[str, str]:
    if config is None:
        return DEFAULT_CONFIG, _read_checkout_file(repo, DEFAULT_CONFIG)
    # `..` is collapsed lexically and symlinks are NOT resolved: resolving would follow a
    # symlink the checkout placed at the config path (or at a directory above it) and
    # read its target as if it were a file the maintainer chose.
    absolute = Path(os.path.abspath(config))
    top = repo.resolve()
    rel = next((absolute.relative_to(a) for a in absolute.parents if _resolves_to(a, top)), None)
    if rel is not None:
        # Inside the checkout: the same symlink and size rules as every checkout file.
        return rel.as_posix(), _read_checkout_file(repo, rel.as_posix())
    # Outside the checkout: a file the maintainer chose on the command line.
    display = str(config)
    try:
        with open(absolute, "rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise _unreadable(f"configuration file {display} cannot be read: {exc.strerror}", display) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise _unreadable(f"configuration file {display} is larger than {MAX_CONFIG_BYTES} bytes", display)
    try:
        return display, data.decode("utf-8")
    except UnicodeDecodeError:
        raise _unreadable(f"configuration file {display} is not valid UTF-8", display) from None
