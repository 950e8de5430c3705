"""Builders shared by the tests of `ci_policy.config`: small configurations and exact error tuples."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import caught

from ci_policy.config.stages import Stage
from ci_policy.config.top import parse_config
from ci_policy.errors import InputErrors

P = ".github/ci-policy.yml"
STAGE_KEYS_HINT = ("allowed keys here: after, backend, cadences, command, diff_pruned, est_time, external, "
                   "max_parallel, max_partitions, name, partitions, paths, requires_labels, runner, runs_on, "
                   "shard_seconds, timeout_per_file, variants, working_directory")

HEAD = "version: 1\ndiscovery:\n  roots: [tests]\n"
CPU_STAGE = "stages:\n  - {name: cpu, backend: cpu}\n"
VALID = HEAD + CPU_STAGE


def errors(text: str) -> list[tuple]:
    return caught(parse_config, text, P)


def coded(text: str) -> list[tuple]:
    """(path, line, col, message, hint, code) of every error `parse_config` raises for `text`."""
    try:
        parse_config(text, P)
    except InputErrors as exc:
        return [(e.path, e.line, e.col, e.message, e.hint, e.code) for e in exc.errors]
    pytest.fail("no InputErrors raised")


def at(text: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """1-based (line, col) of the nth occurrence of `needle` in `text`."""
    pos = -1
    for _ in range(nth):
        pos = text.index(needle, pos + 1)
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def err(text: str, needle: str, message: str, hint: str | None = None, nth: int = 1) -> tuple:
    return (P, *at(text, needle, nth), message, hint)


def coded_err(text: str, needle: str, message: str, code: str, hint: str | None = None, nth: int = 1) -> tuple:
    """The `coded` tuple of an error at the nth `needle` of `text`."""
    return (*err(text, needle, message, hint, nth), code)


def stages(*items: str) -> str:
    return HEAD + "stages:\n" + "".join(f"  - {item}\n" for item in items)


def discovery(body: str) -> str:
    return "version: 1\n" + body + CPU_STAGE


def cpu_stage(line: int, **overrides) -> Stage:
    return dataclasses.replace(Stage(name="cpu", backend="cpu", line=line), **overrides)
