"""`quarantine:` the entries read, and each bad entry refused exactly (location, field, message, hint, code)."""

from __future__ import annotations

import datetime
from dataclasses import replace

import pytest

from ci_policy.config.quarantine import Quarantine
from ci_policy.config.top import parse_config
from ci_policy.errors import InputErrors

P = ".github/ci-policy.yml"
HEAD = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: cpu, backend: cpu}
  - {name: gpu-a, backend: cuda, runs_on: [h200], variants: [{name: big, runs_on: [h200-8]}]}
  - {name: ext, backend: cuda, external: true}
quarantine:
"""


def errors(entries: str) -> list[tuple[str, int | None, int | None, str, str | None, str | None]]:
    with pytest.raises(InputErrors) as caught:
        parse_config(HEAD + entries, P)
    return [(e.path, e.line, e.col, e.message, e.hint, e.code) for e in caught.value.errors]


def test_entries_are_read_with_a_yaml_date_or_an_iso_string():
    config = parse_config(HEAD + """\
  - file: tests/e2e/test_x.py
    stage: gpu-a
    reason: "flaky NCCL init "
    issue: https://github.com/org/repo/issues/1
    until: 2027-01-15
  - {file: tests/e2e/test_y.py, stage: gpu-a+big, reason: hangs, owner: "@bob", until: "2027-01-16"}
""", P)
    assert config.quarantine == (
        Quarantine(file="tests/e2e/test_x.py", stage="gpu-a", reason="flaky NCCL init",
                   issue="https://github.com/org/repo/issues/1", until=datetime.date(2027, 1, 15)),
        Quarantine(file="tests/e2e/test_y.py", stage="gpu-a+big", reason="hangs", owner="@bob",
                   until=datetime.date(2027, 1, 16)))
    assert [(q.line, q.lines["until"]) for q in config.quarantine] == [(9, 13), (14, 14)]
    assert parse_config(HEAD.removesuffix("quarantine:\n"), P).quarantine == ()


HINT_DATE = "write the last day the quarantine holds as YYYY-MM-DD, e.g. 2027-01-15"


@pytest.mark.parametrize("entry, expected", [
    ("- {file: tests/e2e/test_x.py, reason: r, issue: u, until: next week}",
     [(9, 61, "quarantine[0].until: expected a date (YYYY-MM-DD), got a string ('next week')", HINT_DATE, "CP104")]),
    ("- {file: tests/e2e/test_x.py, reason: r, issue: u, until: 2027-02-30}",
     [(9, 61, "quarantine[0].until: '2027-02-30' is not a date: day is out of range for month", HINT_DATE,
       "CP105")]),
    ("- {file: tests/e2e/test_x.py, reason: r, issue: u, until: 2027-01-15T10:00:00}",
     [(9, 61, "quarantine[0].until: expected a date (YYYY-MM-DD), got a timestamp ('2027-01-15T10:00:00')",
       HINT_DATE, "CP104")]),
    ("- {file: tests/e2e/test_x.py, reason: r, issue: u, until: 20270115}",
     [(9, 61, "quarantine[0].until: expected a date (YYYY-MM-DD), got an integer ('20270115')", HINT_DATE,
       "CP104")]),
    ("- {file: tests/e2e/test_x.py, issue: u, until: 2027-01-15}",
     [(9, 5, "quarantine[0].reason: required key is missing", None, "CP103")]),
    ("- {file: tests/e2e/test_x.py, reason: ' ', issue: u, until: 2027-01-15}",
     [(9, 41, "quarantine[0].reason: must not be empty: say why the file is quarantined", None, "CP105")]),
    ("- {file: tests/e2e/test_x.py, reason: r, until: 2027-01-15}",
     [(9, 5, "quarantine[0]: needs an issue or an owner: someone must follow the quarantine up",
       "add issue: <the URL of the issue tracking the fix>, or owner: '@name'", "CP103")]),
    ("- {reason: r, owner: '@a', until: 2027-01-15}",
     [(9, 5, "quarantine[0].file: required key is missing", None, "CP103")]),
    ("- {file: /etc/passwd, reason: r, owner: '@a', until: 2027-01-15}",
     [(9, 12, "quarantine[0].file: '/etc/passwd' is absolute; paths are relative to the repository root",
       "drop the leading '/'", "CP105")]),
    ("- {file: tests/e2e/test_x.py, stage: gpu-b, reason: r, owner: '@a', until: 2027-01-15}",
     [(9, 40, "quarantine[0].stage: names no stage: 'gpu-b'; did you mean 'gpu-a'?",
       "name a stage as plans name it (cpu, gpu-a, gpu-a+big, ext), or leave stage out for every stage",
       "CP105")]),
    ("- {file: tests/e2e/test_x.py, stage: ext, reason: r, owner: '@a', until: 2027-01-15}",
     [(9, 40, "quarantine[0].stage: 'ext' is an external stage: another system runs it, ci-policy never does",
       "quarantine the file in the stage that runs it, or leave stage out", "CP105")]),
    ("- {file: tests/e2e/test_x.py, reason: r, owner: '@a', until: 2027-01-15, why: x}",
     [(9, 76, "quarantine[0].why: unknown key",
       "allowed keys here: file, issue, owner, reason, stage, until", "CP102")]),
    ("- {file: tests/e2e/test_x.py, reason: r, owner: '@a', until: 2027-01-15}\n"
     "  - {file: tests/e2e/test_x.py, reason: s, owner: '@b', until: 2027-02-15}",
     [(10, 5, "quarantine[1]: tests/e2e/test_x.py is quarantined twice (also quarantine[0])", "keep one entry",
       "CP106")]),
], ids=["not-a-date", "no-such-day", "a-timestamp", "a-number", "no-reason", "empty-reason", "no-issue-or-owner",
        "no-file", "absolute-file", "unknown-stage", "external-stage", "unknown-key", "twice"])
def test_a_bad_entry_is_a_located_error(entry, expected):
    assert errors("  " + entry + "\n") == [(P, *e) for e in expected]


def test_until_is_the_last_day_it_holds_and_the_week_before_is_expiring():
    entry = Quarantine(file="tests/e2e/test_x.py", reason="r", owner="@a", until=datetime.date(2027, 1, 15))
    days = {day: (entry.expired(datetime.date(2027, 1, day)), entry.expiring(datetime.date(2027, 1, day)))
            for day in (7, 8, 15, 16)}
    assert days == {7: (False, False), 8: (False, True), 15: (False, True), 16: (True, False)}
    assert entry.describe() == "quarantined until 2027-01-15: r (owner @a)"
    assert entry.applies_to("gpu") and not replace(entry, stage="cpu").applies_to("gpu")
    assert replace(entry, stage="gpu").applies_to("gpu+big", "gpu")
