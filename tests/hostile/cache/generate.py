"""Writes tests/hostile/cache/cases.json, the tampered scan-cache corpus (`tests/hostile/test_cache.py`),
and tests/hostile/cache/splits.json, the tampered shard splits (`tests/hostile/test_split_cache.py`).

Each case damages the stored scan of `tests/e2e/test_tampered.py` (`TAMPERED`, below) in one
place, as someone able to write the cache directory could (the pack's checksum made to match):

- `at` [part, row, field] (or a shorter path; [] is the whole entry) and `value`, the JSON text
  put there: a value of the wrong type, out of range (negative, huge, 5,000 digits, NaN,
  Infinity), nested past any parser, unhashable where a key or a set member is read, text with
  control characters, bidi controls, `##[` or `::error::`, a stage, label or marker the
  configuration does not have, another file's path;
- `pack`: damage to the pack itself (truncated, another context, a checksum of other bytes, a
  body that is not JSON or nested past the parser).

Every case must be refused: the command reads and parses the file instead and prints what
`--no-cache` prints, with one warning.

Each split case damages a stored shard split (`[proven, shard of each file...]`, files longest
first) of the stages of `SPLIT_STAGE` (the pack's checksum made to match): `value` replaces the
whole entry, `at` (0 is `proven`, 1 the first file's shard) and `value` one place of it, `cut`
leaves off the last files, `add` adds a file, `op` names a valid-looking split made from the
stage (`one shard`: every file on the first shard; `piled`: the longest files one to each other
shard and the rest together, longer than LPT; `unproven`: a split at the lower bound marked not
proven; `shifted`: every shard index one higher). Each must be refused: the split is computed
again and the command prints what `--no-cache` prints, with one warning.

Each workflow case (tests/hostile/cache/workflows.json, `tests/hostile/test_workflow_cache.py`)
damages the stored `Workflow` of `WORKFLOW` (`model.workflow_cache`; the pack's checksum made to
match): `at` (a path of list indices into the entry; [] is the whole entry) and `value`, the JSON
text put there: the wrong shape, type or length, a line or column out of range, a lone surrogate,
nesting past the parser. Each must be refused: the workflow is composed again and `lint` prints
what `--no-cache` prints, with one warning.

Run `python tests/hostile/cache/generate.py` after changing the lists below; the output is deterministic.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

TAMPERED = '''from ci_policy import register_ci_gate, register_cuda_ci

register_cuda_ci(est_time=120, suite="stage-b-1-gpu-h200", labels=["megatron"], disabled="flaky, see #12")
register_cuda_ci(est_time=60, suite="stage-c-4-gpu-h200", labels=["nosuch"])
register_ci_gate(metric_key="train/grad_norm", steps=[1, 2], constraint={"rel_up": 0.5, "rel_down": 0.5},
                 enforce=True, allowlist_reason="known drift")
x = (1,  # ci-policy: ignore[CP201]
     2)

if __name__ == "__main__":
    main()
'''

# Text a scan must never hand on unchecked.
HOSTILE_TEXT = ['"x\\r::error::poisoned"', '"x\\n::warning::poisoned"', '"##[warning]poisoned"',
                '"x ##[add-mask]ci-policy"', '"::error::poisoned"', '"a\\u202eb"', '"a\\u0000b"', '"\\udfff"',
                '"a\\u0085b"']
NESTED = "[" * 60 + "]" * 60
# Expanded by the test (kept short here): nesting past the JSON parser, a 5,000-digit integer
# (past Python's limit for converting text to int), text longer than any stored text.
DEEP, DIGITS, LONG = "@DEEP@", "@DIGITS@", "@LONG@"
WRONG = ["[1]", '{"a": 1}', '{"l": [1]}', '{"t": [[1]]}', NESTED, '{"t": [1], "l": [2]}']
POSITION = ["0", "-1", "18446744073709551616", "1e308", "3.0", "true", '"3"', "NaN", "Infinity", DIGITS, *WRONG]
TEXT = [*HOSTILE_TEXT, "7", "true", *WRONG]
FLAG = ["0", "1", '"true"', "null", "1.0", *WRONG]
NUMBER = ["-1", "604801", "1e308", "NaN", "Infinity", "-Infinity", "true", '"60"', "null",
          "1000000000000000000000000000000", DIGITS, *WRONG]
PATH = ['"tests/e2e/test_other.py"', '""', '"tests/e2e/test_tampered.py\\r::error::x"', "7", "null", *WRONG]
ENUM = ['"nosuch"', '"##[warning]x"', '"x\\r::error::y"', "7", "null", "true", '["cuda"]', '{"a": 1}']
TEXTS = ['{"t": ["nosuch"]}', '{"t": ["megatron", "megatron"]}', '{"l": ["megatron"]}', '["megatron"]',
         '{"t": [["megatron"]]}', '{"t": [7]}', '{"t": ["##[warning]x"]}', '{"t": "megatron"}',
         '{"t": ["\\u202e"]}', '{"t": [' + NESTED + ']}', "null", "7"]
STEPS = ['"first"', '{"l": []}', '{"l": [1, 1]}', '{"l": [-1]}', '{"l": [true]}', '{"l": [1.5]}',
         '{"l": [1000000000000000000000000000000]}', '{"t": [1]}', "7", '{"l": [[1]]}', '{"l": ["1"]}']
CONSTRAINT = ['{"t": [{"t": ["rel_up", -1]}, {"t": ["rel_down", 0.5]}]}',
              '{"t": [{"t": ["nosuch", 1]}, {"t": ["rel_up", 0.5]}, {"t": ["rel_down", 0.5]}]}',
              '{"t": [{"t": ["rel_down", NaN]}, {"t": ["rel_up", 0.5]}]}',
              '{"t": [{"t": ["rel_down", 0.5]}, {"t": ["rel_up", Infinity]}]}',
              '{"t": [["rel_down", 0.5], ["rel_up", 0.5]]}', '{"t": [{"t": [["rel_down"], 0.5]}]}',
              '{"d": [["rel_down", 0.5], ["rel_up", 0.5]]}', '{"t": [{"t": ["rel_down", 0.5, 2]}]}',
              '{"t": [{"t": ["rel_up", 0.5]}, {"t": ["rel_down", 0.5]}]}', '{"t": [{"t": ["rel_up", 0.5]}]}',
              '"x"', "7", '{"t": [' + NESTED + ']}']

# The fields of each stored part (`scan_codec._STORED`) and the damage each gets.
PARTS = {
    0: ("registration", {0: PATH, 1: POSITION + ["null"], 2: ENUM + ['"rocm"'], 3: ENUM + ['"stage-c-4-gpu-mi350"'],
                         4: NUMBER, 5: TEXTS, 6: FLAG, 7: TEXT + ['"   "', LONG], 8: FLAG, 9: POSITION, 10: ENUM,
                         11: ENUM + ['"register_rocm_ci"']}),
    1: ("gate", {0: PATH, 1: POSITION, 2: POSITION, 3: TEXT + ['""', "null"], 4: STEPS, 5: CONSTRAINT, 6: FLAG,
                 7: TEXT, 8: ['{"t": ["steps"]}', '{"t": ["steps", "metric_key"]}', '{"t": ["nosuch", "metric_key"]}',
                              '{"t": ["metric_key", "metric_key"]}', *TEXTS]}),
    2: ("diagnostic", {0: TEXT + ["null"], 1: PATH, 2: POSITION, 3: POSITION, 4: TEXT, 5: ['"CP999"', '"cp227"',
                       '"##[error]"', "227", '["CP227"]', '{"a": 1}'], 6: ENUM + ['"fatal"']}),
    3: ("suppression", {0: PATH, 1: POSITION, 2: POSITION, 3: POSITION, 4: POSITION,
                        5: ['{"t": ["CP2011"]}', '{"t": ["##[x"]}', *TEXTS[3:]]}),
    4: ("label call", {0: ENUM + ['"register_ci_gate"'], 1: POSITION, 2: FLAG}),
}
SHAPES = {  # the whole entry, a part or a row
    (): ["[]", "[[], [], [], []]", "[[], [], [], [], [], []]", '"x"', '{"a": 1}', "7", NESTED, DEEP,
         '[[], [], [], [], "x"]', '[{"l": []}, [], [], [], []]'],
    (0,): ['"x"', "[1]", "[[1]]", '[{"a": 1}]', "[" + NESTED + "]"],
    (0, 0): ["[]", "[1]", '"x"', '{"a": 1}', NESTED],
    (1, 0): ["[]", '["x"]'],
    (2, 0): ["[]", "[null, null, null, null, null, null, null, null]"],
}
PACKS = ["truncated", "another context", "checksum of other bytes", "body not JSON", "body nested past the parser",
         "an int of 5000 digits", "header only"]


# Est values of the stage the split cases damage: LPT is not optimal on them (a split at the
# lower bound exists), so the stored split is the exact search's.
SPLIT_STAGE = [300, 290, 280, 270, 240, 230, 220, 210, 130, 110, 90, 70]
SPLIT_VALUES = ["[]", '{"a": 1}', '"x"', "7", "null", NESTED, "[1]", "[true, 0, 1, 2]"]
SPLIT_PLACES = ['"0"', "-1", "3", "1.0", "true", "null", "18446744073709551616", "[0]", '{"a": 0}']
SPLIT_PROVEN = ["2", "-1", "true", "1.0", '"1"', "null", "[1]"]
SPLIT_OPS = ["one shard", "piled", "unproven", "shifted"]


def split_cases() -> list[dict[str, object]]:
    out: list[dict[str, object]] = [{"name": f"entry = {v[:40]}", "value": v} for v in SPLIT_VALUES]
    out.extend({"name": f"proven = {v}", "at": 0, "value": v} for v in SPLIT_PROVEN)
    out.extend({"name": f"file {at} shard = {v}", "at": at, "value": v} for at in (1, 12) for v in SPLIT_PLACES)
    out.extend([{"name": "last file left off", "cut": 1}, {"name": "every file left off", "cut": 12},
                {"name": "a file added", "add": "0"}])
    out.extend({"name": f"op: {op}", "op": op} for op in SPLIT_OPS)
    return out


WORKFLOW = """name: gpu
on: [pull_request]
permissions:
  contents: read
jobs:
  stage-w:
    runs-on: [cpu-only]
    permissions: read-all
    steps:
      - run: |
          ci-policy run --stage stage-nosuch
      - run: ci-policy run --stage $GITHUB_JOB
  call:
    uses: ./.github/workflows/other.yml
    with:
      stage: stage-w
    secrets:
      token: ${{ secrets.TOKEN }}
"""
# The entry: [triggers, jobs, permissions]; a job: [id, line, col, runs_on, runs_on_at, uses,
# with, secrets, stage_runs, permissions]; a located value [text, line, col]; grants
# [scopes, shorthand, line, col]; a stage run [stage, line, col].
W_POSITION = ["0", "-1", "2147483649", "1.0", "true", '"3"', "null", "NaN", "Infinity", DIGITS, "[1]"]
W_TEXT = ["7", "null", "true", '"\\udfff"', "[]", '{"a": 1}']
WORKFLOW_PLACES: dict[tuple[int, ...], list[str]] = {
    (): ["[]", '{"a": 1}', '"x"', "7", "null", NESTED, "[[], [], null, 1]", "[[], []]"],
    (0,): ['"pull_request"', "[1]", "[null]", '["\\udfff"]', "{}"],
    (0, 0): ['"\\ud800x"', "7", "[]"],
    (1,): ["{}", "[1]", "[[]]", '"jobs"'],
    (2,): ["1", '"read-all"', "[[], null, 0, 1]", '[[["contents"]], null, 1, 1]', '[[], 7, 1, 1]'],
    (1, 0, 0): W_TEXT,
    (1, 0, 1): W_POSITION,
    (1, 0, 2): W_POSITION,
    (1, 0, 3): ['"cpu-only"', "[1]", '{"a": 1}', '["\\udfff"]'],
    (1, 0, 4): ["[1, 1]", '["", 0, 1]', "5", '[7, 1, 1]'],
    (1, 0, 8): ['[[1, 1, 1]]', '[["s", 0, 1]]', '[["s", 1, 0]]', '[["s", 1]]', '"run"'],
    (1, 0, 8, 0, 1): W_POSITION,
    (1, 0, 9): ['"read-all"', "[[], null, 1]", '[[["contents", "write", "x"]], null, 1, 1]'],
    (1, 1, 5): ["[1, 1]", '["x", 1, 0]', '"./.github/workflows/other.yml"'],
    (1, 1, 6): ['[["stage"]]', '[[1, ["x", 1, 1]]]', '[["stage", null]]', '{"stage": 1}'],
    (1, 1, 7): ['"all"', "7", '[["token", 7]]', '[["token", ["x", 1, 1], 1]]'],
}


def workflow_cases() -> list[dict[str, object]]:
    return [{"name": f"{list(at)} = {v[:40]}", "at": list(at), "value": v}
            for at, values in WORKFLOW_PLACES.items() for v in values]


def cases() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for at, values in SHAPES.items():
        out.extend({"name": f"shape {list(at)} = {v[:40]}", "at": list(at), "value": v} for v in values)
    for part, (what, by_field) in PARTS.items():
        for field, values in by_field.items():
            out.extend({"name": f"{what} field {field} = {v[:40]}", "at": [part, 0, field], "value": v}
                       for v in values)
    out.extend({"name": f"pack: {p}", "pack": p} for p in PACKS)
    return out


if __name__ == "__main__":
    (HERE / "cases.json").write_text(json.dumps({"tampered": TAMPERED, "cases": cases()}, indent=1) + "\n")
    (HERE / "splits.json").write_text(json.dumps({"stage": SPLIT_STAGE, "cases": split_cases()}, indent=1) + "\n")
    (HERE / "workflows.json").write_text(json.dumps({"workflow": WORKFLOW, "cases": workflow_cases()}, indent=1)
                                         + "\n")
