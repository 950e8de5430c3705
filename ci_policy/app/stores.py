"""The metric store a command names: `--store URL` or `--store-file FILE`, else `$CI_POLICY_DATABASE_URL`.

- In: the two options' values.
- Out: `store_url(store, store_file)` the URL named (None for neither), never echoed;
  `store_kind(store, store_file)` its kind (`sqlite`, `postgresql`), None for none or for a
  location that is not valid (the command reports it, in its own order).
- Refused: a store file that cannot be read or does not hold exactly one URL, a `--store` that is
  no store location, or one holding a password (a command line is readable by every process of
  the machine), as `UsageError` naming the option.
"""

from __future__ import annotations

import os
import re

from ci_policy.errors import UsageError
from ci_policy.read.lazyregex import LazyRegex

# `adapters.store.DATABASE_URL_ENV`, named here: importing the store to read it would load the
# store's modules on every run, which opens no store unless one is named.
DATABASE_URL_ENV = "CI_POLICY_DATABASE_URL"

# A password in a URL's user info (`user:pw@`), or a `password=` parameter or libpq keyword.
_URL_PASSWORD = LazyRegex(r"://[^/@?#]*:[^/@?#]*@|password\s*=", re.IGNORECASE)


def store_url(store: str | None, store_file: str | None) -> str | None:
    if store_file is not None:
        try:
            with open(store_file, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
            raise UsageError(f"cannot read {store_file}: {reason}", source="--store-file",
                             hint="write the store URL on the first line of the file") from None
        urls = [line.strip() for line in lines if line.strip()]
        if len(urls) != 1:
            raise UsageError(f"{store_file} must hold exactly one store URL, found {len(urls)} non-empty "
                             "lines", source="--store-file", hint="write the store URL on one line")
        return urls[0]
    if store is not None:
        # Imported here: a run that names no store loads none of the store's modules (tests/cli/
        # test_startup.py::test_a_stage_job_naming_no_store_loads_no_store_module).
        from ci_policy.adapters.store import parse_location

        parse_location(store, "--store")  # a value that is no store location at all is the first thing to fix
    if store is not None and _URL_PASSWORD.search(store):
        raise UsageError("the store URL holds a password, and a command line is readable by every process "
                         "of the machine (a test reads it from /proc)", source="--store",
                         hint="pass the URL as $CI_POLICY_DATABASE_URL or in a file with --store-file FILE")
    return store or None


def store_kind(store: str | None, store_file: str | None) -> str | None:
    try:
        url = store_url(store, store_file) or os.environ.get(DATABASE_URL_ENV) or None
        if not url:
            return None
        # Imported here, as in `store_url` (tests/cli/test_startup.py::
        # test_a_stage_job_naming_no_store_loads_no_store_module).
        from ci_policy.adapters.store import store_kind as kind_of

        return kind_of(url)
    except UsageError:  # reported by the subcommand itself, in its own order
        return None
