"""What `init` reads from a checkout's workflows: suites with their runners, gates, collectors and mapping files.

- Matrix combinations expand as GitHub documents them (lists, `include`, `exclude`), and a
  `${{ matrix.X }}` in `runs-on` or a script is the combination's value; anything decided at
  run time is None, never a guess.
- Commands are read as the shell splits them: `cd`, `working-directory:`, `-w DIR` (a
  container's mount: its trailing part that is a directory here), `bash -c "..."`.
- Symlinks, unreadable YAML or JSON and unparsable collectors are notes; nothing is executed.
"""

from __future__ import annotations

import os
from pathlib import Path

from ci_policy.read.suite_jobs import RunnerMap, read_suite_jobs, split_glob

WF = ".github/workflows"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def runs(root: Path) -> list[tuple]:
    return [(r.job, r.suite, r.hw, r.runs_on, r.labels, r.collector, r.workdir) for r in read_suite_jobs(root).runs]


def test_matrix_lists_include_and_exclude_expand_as_github_documents(tmp_path):
    write(tmp_path, {"test/run_suite.py": "", f"{WF}/ci.yml": """\
on: [pull_request]
jobs:
  amd:
    runs-on: ${{ matrix.runner }}
    strategy:
      matrix:
        runner: [mi325, mi355]
        part: [0, 1]
        exclude:
          - {runner: mi355, part: 1}
        include:
          - {runner: mi355, suite: big}
          - {runner: gaudi, suite: hpu}
    steps:
      - run: cd test && python3 run_suite.py --hw amd --suite ${{ matrix.suite || 'small' }} --part ${{ matrix.part }}
      - run: cd test && python3 run_suite.py --hw amd --suite "${{ matrix.suite }}"
"""})
    # mi325 x {0, 1} and mi355 x {0}; the first include joins mi355's combination, the second
    # overwrites an original value nowhere, so it is a combination of its own.
    assert runs(tmp_path) == [
        ("amd", "big", "amd", ("mi355",), (), "test/run_suite.py", "test"),
        ("amd", "hpu", "amd", ("gaudi",), (), "test/run_suite.py", "test"),
    ]


def test_a_runner_decided_at_run_time_is_none_and_a_static_one_is_kept(tmp_path):
    write(tmp_path, {f"{WF}/ci.yml": """\
on: push
jobs:
  dynamic:
    runs-on: ${{ fromJSON(needs.plan.outputs.map)[matrix.suite] }}
    strategy: {matrix: {suite: [a]}}
    steps: [{run: "python3 run_suite.py --suite ${{ matrix.suite }}"}]
  from-json:
    runs-on: [self-hosted, h200]
    strategy: {matrix: "${{ fromJSON(needs.plan.outputs.matrix) }}"}
    steps: [{run: "python3 run_suite.py --suite=b"}]
  labels:
    runs-on: {group: gpus, labels: [h100]}
    steps: [{run: "ci-policy run --stage c --shard 0"}, {run: "python3 run_suite.py --suite $SUITE"}]
"""})
    assert runs(tmp_path) == [
        ("dynamic", "a", None, None, (), None, None),
        ("from-json", "b", None, None, (), None, None),
        ("labels", "c", None, ("h100",), (), None, None),
    ]


def test_directories_come_from_cd_working_directory_a_container_mount_and_bash_c(tmp_path):
    write(tmp_path, {"test/run_suite.py": "", "test/srt/run_suite.py": "", f"{WF}/ci.yml": """\
on: pull_request
jobs:
  a:
    runs-on: a
    steps:
      - run: |
          cd test/
          python3 run_suite.py --suite one
          cd srt; python3 run_suite.py --suite two
  b:
    runs-on: b
    defaults: {run: {working-directory: test}}
    steps:
      - run: python3 run_suite.py --suite three
      - working-directory: test/srt
        run: python3 run_suite.py --suite four
  c:
    runs-on: c
    steps:
      - run: bash scripts/exec.sh -w "/sglang-checkout/test" python3 run_suite.py --hw amd --suite five
      - run: docker exec ci bash -c "cd /sglang/test/srt && python3 run_suite.py --hw xpu --suite six"
      - run: python3 test/run_suite.py --suite seven
"""})
    assert [(suite, hw, collector, workdir) for _j, suite, hw, _r, _l, collector, workdir in runs(tmp_path)] == [
        ("one", None, "test/run_suite.py", "test"),
        ("two", None, "test/srt/run_suite.py", "test/srt"),
        ("three", None, "test/run_suite.py", "test"),
        ("four", None, "test/srt/run_suite.py", "test/srt"),
        ("five", "amd", "test/run_suite.py", "test"),
        ("six", "xpu", "test/srt/run_suite.py", "test/srt"),
        ("seven", None, "test/run_suite.py", None),
    ]


def test_label_gates_are_positive_label_tests_of_the_job_or_a_job_it_needs(tmp_path):
    labels = "contains(github.event.pull_request.labels.*.name, '{}')"
    write(tmp_path, {f"{WF}/ci.yml": f"""\
on: pull_request
jobs:
  gate:
    if: github.event_name != 'pull_request' || {labels.format("run-ci")}
    runs-on: ubuntu-latest
    steps: [{{run: "true"}}]
  needs-gate:
    needs: gate
    runs-on: x
    steps: [{{run: "python3 run_suite.py --suite a"}}]
  own:
    if: {labels.format("amd")}
    needs: [needs-gate]
    runs-on: x
    steps: [{{run: "python3 run_suite.py --suite b"}}]
  negated:
    if: "!{labels.format("skip-ci")}"
    runs-on: x
    steps: [{{run: "python3 run_suite.py --suite c"}}]
  either:
    if: {labels.format("a")} || {labels.format("b")}
    runs-on: x
    steps: [{{run: "python3 run_suite.py --suite d"}}]
  always:
    needs: gate
    if: always() && {labels.format("late")}
    runs-on: x
    steps: [{{run: "python3 run_suite.py --suite e"}}]
"""})
    assert [(suite, gates) for _j, suite, _h, _r, gates, _c, _w in runs(tmp_path)] == [
        ("a", ("run-ci",)), ("b", ("amd", "run-ci")), ("c", ()), ("d", ()), ("e", ("late",))]


def test_runner_mapping_files_a_workflow_names_are_read_and_bad_ones_are_notes(tmp_path):
    write(tmp_path, {
        "ci/runners.json": '{"a": "h100", "b": ["self-hosted", "mi325"], "c": {"runs-on": "npu"}, "d": 3}',
        "ci/runners.yml": "e: [xpu]\n",
        "ci/broken.json": "{",
        "ci/list.json": '["not", "a", "mapping"]',
        f"{WF}/ci.yml": """\
on: schedule
jobs:
  read:
    runs-on: ubuntu-latest
    steps:
      - run: jq -c . ci/runners.json; yq . ci/runners.yml; cat ci/broken.json ci/list.json ci/missing.json
""",
    })
    os.symlink(tmp_path / "ci/runners.json", tmp_path / "ci/linked.json")
    (tmp_path / WF / "ci.yml").write_text((tmp_path / WF / "ci.yml").read_text() + "      - run: cat ci/linked.json\n")
    facts = read_suite_jobs(tmp_path)
    assert facts.maps == (
        RunnerMap("ci/runners.json", f"{WF}/ci.yml", (("a", ("h100",)), ("b", ("self-hosted", "mi325")),
                                                     ("c", ("npu",)))),
        RunnerMap("ci/runners.yml", f"{WF}/ci.yml", (("e", ("xpu",)),)),
    )
    assert [(n.path, n.message) for n in facts.notes] == [
        ("ci/broken.json", f"ci/broken.json, which {WF}/ci.yml reads, is not valid JSON; init read no runner from it"),
        ("ci/linked.json", "init did not read it: runner mapping ci/linked.json is a symlink; ci-policy refuses "
                           "symlinks in a checkout"),
    ]


def test_collector_globs_are_string_literals_of_its_source(tmp_path):
    write(tmp_path, {
        "test/run_suite.py": 'import glob\nFILES = glob.glob("registered/**/*.py", recursive=True)\n'
                             'OTHER = "*.py"\nABS = "/tmp/**/*.py"\nDOC = "registered/README.md"\n',
        "bad/run_suite.py": "def (:\n",
        f"{WF}/ci.yml": "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n"
                        "      - run: cd test && python3 run_suite.py --suite a\n"
                        "      - run: cd bad && python3 run_suite.py --suite b\n",
    })
    facts = read_suite_jobs(tmp_path)
    assert facts.globs == (("test/run_suite.py", "registered/**/*.py"),)
    assert [(n.path, n.message.split(":")[0]) for n in facts.notes] == [
        ("bad/run_suite.py", "collector bad/run_suite.py cannot be parsed, so init did not read its globs")]
    assert split_glob("registered/**/*.py") == ("registered", "*.py")
    assert split_glob("a/b/test_*.py") == ("a/b", "test_*.py")
    assert split_glob("**/*.py") == (".", "*.py")
    assert split_glob("tests/*/unit/*.py") is None


def test_symlinks_and_invalid_yaml_are_notes_and_nothing_is_read_through_them(tmp_path):
    outside = write(tmp_path / "outside", {"wf.yml": "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n"
                                                     "      - run: python3 run_suite.py --suite secret\n"})
    repo = write(tmp_path / "repo", {f"{WF}/bad.yml": "on: [push\n"})
    os.symlink(outside / "wf.yml", repo / WF / "linked.yml")
    facts = read_suite_jobs(repo)
    assert facts.runs == ()
    assert [(n.path, n.message) for n in facts.notes] == [
        (f"{WF}/bad.yml", f"workflow {WF}/bad.yml is not valid YAML, so init did not read it: expected ',' or ']', "
                          "but got '<stream end>'"),
        (f"{WF}/linked.yml", f"init did not read it: workflow {WF}/linked.yml is a symlink; ci-policy refuses "
                             "symlinks in a checkout"),
    ]
    linked = tmp_path / "linked"
    (linked / ".github").mkdir(parents=True)
    os.symlink(outside, linked / WF)
    facts = read_suite_jobs(linked)
    assert (facts.runs, [n.message.split(";")[0] for n in facts.notes]) == (
        (), [f"init did not read it: workflows directory {WF} is a symlink"])


def test_a_workflow_nested_past_the_yaml_parser_is_a_note_not_a_failed_init(tmp_path):
    # 900 unclosed `{` made PyYAML's parser recurse past Python's limit (atheris found it in lint's reader).
    repo = write(tmp_path, {f"{WF}/deep.yml": "{" * 900, f"{WF}/ok.yml": (
        "on: push\njobs:\n  a:\n    runs-on: h100\n    steps:\n      - run: python3 run_suite.py --suite s\n")})
    facts = read_suite_jobs(repo)
    assert [(r.job, r.suite, r.runs_on) for r in facts.runs] == [("a", "s", ("h100",))]
    assert [(n.path, n.message) for n in facts.notes] == [
        (f"{WF}/deep.yml", f"workflow {WF}/deep.yml is not valid YAML, so init did not read it: nesting deeper "
                           "than the YAML parser can follow")]


def test_a_checkout_without_workflows_has_no_facts(tmp_path):
    facts = read_suite_jobs(tmp_path)
    assert (facts.workflows, facts.runs, facts.maps, facts.globs, facts.notes) == ((), (), (), (), ())


def test_a_matrix_too_large_to_expand_and_a_deep_needs_lattice_are_read_at_once(tmp_path):
    axes = "\n".join(f"        a{i}: [{', '.join(str(v) for v in range(10))}]" for i in range(12))
    # 40 layers of two jobs, each needing both jobs of the layer before: 2**40 paths of `needs`.
    layers = "".join(f"  l{i}-{side}:\n    needs: [l{i - 1}-a, l{i - 1}-b]\n    runs-on: x\n    steps: []\n"
                     for i in range(1, 40) for side in "ab")
    write(tmp_path, {f"{WF}/ci.yml": f"""\
on: pull_request
jobs:
  l0-a:
    if: contains(github.event.pull_request.labels.*.name, 'run-ci')
    runs-on: x
    steps: []
  l0-b:
    runs-on: x
    steps: []
{layers}  huge:
    needs: [l39-a, l39-b]
    runs-on: ${{{{ matrix.a0 }}}}
    strategy:
      matrix:
{axes}
    steps: [{{run: "python3 run_suite.py --suite big"}}]
"""})
    # 10**12 combinations are never built: the runner is unknown, the static suite still read.
    assert runs(tmp_path) == [("huge", "big", None, None, ("run-ci",), None, None)]
