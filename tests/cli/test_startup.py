"""`ci-policy --help` and `--version` import no subcommand module (nor typing, dataclasses or pathlib), a
subcommand no other subcommand's module, and a stage job reading its plan none it does not use
(checked in `sys.modules` of a fresh interpreter, never by timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import clean_env

PROBE = """
import json, sys
from ci_policy.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted(m for m in sys.modules if m.startswith("ci_policy") or m == "yaml")))
"""


def _loaded(argv: list[str], cwd) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=cwd,
                          env=clean_env(), check=True)
    return json.loads(proc.stderr)


def test_help_imports_no_subcommand_module(tmp_path) -> None:
    # The console guard is the one module --help adds: every command's output passes it (issue 32).
    assert _loaded(["--help"], tmp_path) == ["ci_policy", "ci_policy.cli", "ci_policy.cli.main", "ci_policy.render",
                                             "ci_policy.render.console", "ci_policy.render.escape", "ci_policy.sdk",
                                             "ci_policy.sdk.markers"]


def test_help_lists_the_subcommands_as_their_own_parsers_do() -> None:
    from ci_policy.cli.main import build_parser

    assert build_parser(["--help"], every=False).format_help() == build_parser().format_help()


@pytest.mark.parametrize("columns", ["50", "120", "", "x", "-3"])
def test_the_help_is_as_wide_as_argparse_makes_it(monkeypatch, columns) -> None:
    """`terminal_columns` sizes the help as `shutil.get_terminal_size` sizes argparse's own."""
    import argparse

    from ci_policy.cli.main import build_parser

    monkeypatch.setenv("COLUMNS", columns)
    top = build_parser(["run"], every=False)
    run = top._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    for parser in (top, run):
        ours = parser.format_help()
        parser.formatter_class = argparse.HelpFormatter
        # The examples at the end are printed as written (argparse would fill them as a paragraph).
        examples, parser.epilog = parser.epilog, None
        assert examples and ours == parser.format_help() + "\n" + examples + "\n"
        if columns == "120":  # narrower, argparse lets a long option overflow
            assert max(map(len, ours.splitlines())) <= 118
    if columns == "120":  # the width is used
        assert max(map(len, run.format_help().splitlines())) > 80


def test_version_imports_no_subcommand(tmp_path) -> None:
    assert _loaded(["--version"], tmp_path) == ["ci_policy", "ci_policy.cli", "ci_policy.cli.main", "ci_policy.sdk",
                                                "ci_policy.sdk.markers"]


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_neither_typing_nor_dataclasses(flag, tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, flag], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), check=True)
    unwanted = {"typing", "dataclasses", "inspect"} | ({"argparse"} if flag == "--version" else set())
    assert unwanted & set(json.loads(proc.stderr)) == set()


def test_a_subcommand_imports_only_its_own_module(tmp_path) -> None:
    commands = {m for m in _loaded(["result", "--help"], tmp_path) if m.startswith("ci_policy.cli.")}
    assert commands == {"ci_policy.cli.main", "ci_policy.cli.result", "ci_policy.cli.options", "ci_policy.cli.output"}


def test_a_stage_job_given_its_plan_loads_no_scan_store_or_github_module(tmp_path, capsys) -> None:
    """`list --plan` (what `run --plan` reads before its first test): no test file is scanned,
    so neither the scan cache nor the marker parser's adapters load, nor the metric store
    (no gates, no store named), the GitHub gateway or the tuning code."""
    import shutil

    from helpers import EXAMPLE_REPO, run_cli

    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE_REPO, repo, ignore=shutil.ignore_patterns("__pycache__"))
    rc, out, _err = run_cli(["plan", "--repo", str(repo), "--event", "push", "--format", "json", "--no-cache"],
                            capsys)
    assert rc == 0
    (tmp_path / "plan.json").write_text(out)
    stage = next(s for s in json.loads(out)["stages"] if len(s["shards"]) == 1 and not s["invalid"])
    loaded = _loaded(["list", "--repo", str(repo), "--plan", str(tmp_path / "plan.json"), "--stage",
                      stage["name"], "--format", "json"], tmp_path)
    assert [m for m in loaded if m.startswith("ci_policy.cli.")] == ["ci_policy.cli.collector", "ci_policy.cli.extras",
                                                                      "ci_policy.cli.list",
                                                                      "ci_policy.cli.main", "ci_policy.cli.options",
                                                                      "ci_policy.cli.output"]
    unwanted = ("ci_policy.adapters.store", "ci_policy.adapters.scan_cache", "ci_policy.adapters.github",
                "ci_policy.adapters.tuning", "ci_policy.adapters.runner")
    assert [m for m in loaded if m.startswith(unwanted)] == []


def test_schema_imports_no_adapter_nor_another_subcommand(tmp_path) -> None:
    loaded = _loaded(["schema", "config"], tmp_path)
    assert [m for m in loaded if m.startswith(("ci_policy.cli.", "ci_policy.adapters."))] == [
        "ci_policy.cli.collector", "ci_policy.cli.extras", "ci_policy.cli.main", "ci_policy.cli.options",
        "ci_policy.cli.output", "ci_policy.cli.schema"]


STDLIB_PROBE = """
import sys
from ci_policy.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stderr.write(" ".join(sorted(m for m in ("json", "uuid", "tempfile", "shutil") if m in sys.modules)))
"""


def test_help_imports_no_json_uuid_tempfile_or_shutil_module(tmp_path) -> None:
    # Modules a subcommand needs only when it runs are imported when it runs; the help's width
    # is not taken from shutil (`cli.main.terminal_columns`).
    proc = subprocess.run([sys.executable, "-c", STDLIB_PROBE, "--help"], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), check=True)
    assert proc.stderr == ""


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_no_pathlib(flag, tmp_path) -> None:
    # An editable install's finder imports pathlib (and urllib.parse) when the interpreter starts;
    # an installed ci-policy's does not: the package is put on the path of an interpreter without
    # `site` (-S), so what ci-policy itself imports shows.
    import ci_policy

    proc = subprocess.run([sys.executable, "-S", "-c", MODULES_PROBE, flag], capture_output=True, text=True,
                          cwd=tmp_path, env=clean_env(PYTHONPATH=str(Path(ci_policy.__file__).parents[1])),
                          check=True)
    assert {"pathlib", "urllib.parse"} & set(json.loads(proc.stderr)) == set()


MODULES_PROBE = """
import json, sys
from ci_policy.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted(sys.modules)))
"""

# What a stage job reading its plan does not use: glob matching (the configuration has no glob),
# gate evaluation (no gate declared), the required-gate check and the estimates file of a scan,
# "did you mean" suggestions, and the renderers' and planners' modules of other commands.
NOT_FOR_A_STAGE_JOB = ("pathspec", "statistics", "difflib", "ci_policy.gates.evaluate", "ci_policy.gates.requirements",
                       "ci_policy.model.estimates", "ci_policy.model.lint",
                       "ci_policy.plan.explain", "ci_policy.plan.outcome",
                       "ci_policy.read.workflows")


def unit_repo(tmp_path) -> Path:
    """A checkout of one `runner: python` stage `unit` and its one test file, which prints `test_a ran`."""
    repo = tmp_path / "repo"
    (repo / ".github").mkdir(parents=True)
    (repo / ".github" / "ci-policy.yml").write_text(
        "version: 1\ndiscovery: {roots: [tests]}\nstages:\n  - {name: unit, backend: cpu, runner: python}\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_a.py").write_text(
        'from ci_policy import register_cpu_ci\n\nregister_cpu_ci(est_time=5, suite="unit")\n\n'
        'if __name__ == "__main__":\n    print("test_a ran")\n')
    return repo


def committed_unit_repo(tmp_path, monkeypatch) -> Path:
    """`unit_repo`, committed: a clean git tree, which a per-stage plan holds for."""
    repo = unit_repo(tmp_path)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                                                 "-c", "commit.gpgsign=false", "commit", "-q", "-m", "planned"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    return repo


def test_a_stage_job_given_its_plan_imports_no_glob_gate_or_other_command_module(tmp_path, capsys) -> None:
    from helpers import run_cli

    repo = unit_repo(tmp_path)
    rc, out, _err = run_cli(["plan", "--repo", str(repo), "--event", "push", "--format", "json", "--no-cache"],
                            capsys)
    assert rc == 0
    (tmp_path / "plan.json").write_text(out)
    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, "list", "--repo", str(repo), "--plan",
                           str(tmp_path / "plan.json"), "--stage", "unit", "--format", "json"],
                          capture_output=True, text=True, cwd=tmp_path, env=clean_env(), check=True)
    assert json.loads(proc.stdout)["files"] == ["tests/test_a.py"]
    assert [m for m in json.loads(proc.stderr) if m.startswith(NOT_FOR_A_STAGE_JOB)] == []


# What a stage job running from its per-stage plan never imports: the configuration's tables and
# PyYAML (the plan carries the settings it runs with), the planner, the registry and the scan.
CONFIGURATION_AND_PLANNER = ("yaml", "ci_policy.config.top", "ci_policy.config.fields", "ci_policy.config.stages",
                             "ci_policy.config.runner", "ci_policy.config.load", "ci_policy.plan.build",
                             "ci_policy.plan.policy", "ci_policy.plan.selection", "ci_policy.model.snapshot",
                             "ci_policy.model.scan", "ci_policy.model.registry", "ci_policy.read.markers",
                             "ci_policy.adapters.scan_cache")


def test_a_stage_job_given_its_per_stage_plan_parses_no_configuration(tmp_path, monkeypatch) -> None:
    repo = committed_unit_repo(tmp_path, monkeypatch)
    planned = tmp_path / "planned"
    planned.mkdir()
    subprocess.run([sys.executable, "-m", "ci_policy", "plan", "--repo", str(repo), "--event", "push",
                    "--json-out", str(planned / "plan.json"), "--stage-plans", str(planned / "stages")],
                   capture_output=True, check=True, env=clean_env(), cwd=tmp_path)
    run = ["run", "--repo", str(repo), "--plan", str(planned), "--stage", "unit", "--records-out",
           str(tmp_path / "records"), "--timings-out", str(tmp_path / "timings.jsonl")]
    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, *run], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), check=True)
    assert "test_a ran" in proc.stdout and "RESULT: PASS" in proc.stdout
    assert [m for m in json.loads(proc.stderr) if m.startswith(CONFIGURATION_AND_PLANNER)] == []
    # A gate store named: the plan is read with the configuration, as without a per-stage plan.
    store = str(tmp_path / "metrics.db")
    for extra, env in ((["--store", store], clean_env()), ([], clean_env(CI_POLICY_DATABASE_URL=store))):
        proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, *run, *extra], capture_output=True, text=True,
                              cwd=tmp_path, env=env, check=True)
        assert "RESULT: PASS" in proc.stdout
        # The modules come last; as root, the warning that the tests could read the store URL first.
        assert {"yaml", "ci_policy.config.top", "ci_policy.plan.build"} <= set(json.loads(proc.stderr.splitlines()[-1]))


def test_a_stage_job_naming_no_store_loads_no_store_module(tmp_path, monkeypatch) -> None:
    """`run --plan DIR` with no `--store`, `--store-file` or `$CI_POLICY_DATABASE_URL`: the store's
    modules and sqlite3 stay unloaded (`app.stores` imports them only for a store named)."""
    repo = committed_unit_repo(tmp_path, monkeypatch)
    planned = tmp_path / "planned"
    subprocess.run([sys.executable, "-m", "ci_policy", "plan", "--repo", str(repo), "--event", "push",
                    "--json-out", str(tmp_path / "plan.json"), "--stage-plans", str(planned)],
                   capture_output=True, check=True, env=clean_env(), cwd=tmp_path)
    run = ["run", "--repo", str(repo), "--plan", str(tmp_path / "plan.json"), "--stage", "unit", "--records-out",
           str(tmp_path / "records"), "--timings-out", str(tmp_path / "timings.jsonl")]
    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, *run], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), check=True)
    assert "test_a ran" in proc.stdout and "RESULT: PASS" in proc.stdout
    assert [m for m in json.loads(proc.stderr) if m.startswith(("ci_policy.adapters.store", "sqlite3"))] == []


def test_a_report_that_publishes_nothing_loads_no_github_module(tmp_path) -> None:
    """`report` without `--publish-issue` needs no `github` extra: neither PyGithub nor the use case
    publishing the issue is imported (`cli.report` imports it only when asked)."""
    store = tmp_path / "history.sqlite"
    subprocess.run([sys.executable, "-m", "ci_policy", "history", "import", "--store", str(store)],
                   capture_output=True, check=True, env=clean_env(), cwd=tmp_path)
    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, "report", "--store", str(store), "--format",
                           "markdown"], capture_output=True, text=True, cwd=tmp_path, env=clean_env(), check=True)
    assert proc.stdout.startswith("## CI health: ")
    loaded = json.loads(proc.stderr)
    assert "ci_policy.cli.report" in loaded
    assert [m for m in loaded if m.startswith(("github", "ci_policy.adapters.github", "ci_policy.app.publish"))] == []


PLAN_ONLY = ("ci_policy.app.plan_documents", "ci_policy.plan.written", "ci_policy.plan.jobs", "ci_policy.plan.explain",
             "ci_policy.render.jsondoc", "ci_policy.render.github", "ci_policy.render.markdown", "ci_policy.cli.paths",
             "ci_policy.plan.planfile", "ci_policy.adapters.inputs", "ci_policy.plan.document", "ci_policy.plan.inputs")


@pytest.mark.parametrize(("argv", "loaded"), [
    ([], ("ci_policy.plan.jobs",)),  # text: the plan and its stage jobs as text, nothing written
    (["--format", "markdown"], ("ci_policy.plan.jobs", "ci_policy.render.markdown")),
    # The plan's inputs, not the plan file's reader (test_a_plan_imports_no_module_of_running_it).
    (["--format", "json"], ("ci_policy.adapters.inputs", "ci_policy.app.plan_documents", "ci_policy.plan.document",
                            "ci_policy.plan.inputs", "ci_policy.plan.jobs", "ci_policy.plan.written",
                            "ci_policy.render.github", "ci_policy.render.jsondoc")),
    # No --json-out: the plan's content ids are not computed.
    (["--format", "github"], ("ci_policy.app.plan_documents", "ci_policy.cli.paths", "ci_policy.plan.document",
                              "ci_policy.plan.jobs", "ci_policy.plan.written", "ci_policy.render.github",
                              "ci_policy.render.jsondoc", "ci_policy.render.markdown")),
    # Nor the plan document's classes (test_lint_and_registry_import_no_planner).
    (["--explain", "tests/e2e/test_fsdp_grpo.py"], ("ci_policy.plan.explain", "ci_policy.render.jsondoc")),
])
def test_plan_imports_only_what_its_format_uses(argv, loaded, tmp_path) -> None:
    """The plan document and the renderers of the formats not asked for are not imported (the
    plan job's `--format github` writes the document and the outputs: it imports them), nor the
    metric recorder's temporary files."""
    from helpers import EXAMPLE_REPO

    env = clean_env(GITHUB_OUTPUT=str(tmp_path / "out"), GITHUB_STEP_SUMMARY=str(tmp_path / "summary"))
    probe = PROBE.replace('or m == "yaml"', 'or m in ("yaml", "tempfile", "secrets")')
    proc = subprocess.run([sys.executable, "-c", probe, "plan", "--repo", str(EXAMPLE_REPO), "--event", "push",
                           "--no-cache", *argv], capture_output=True, text=True, cwd=tmp_path, env=env, check=True)
    modules = set(json.loads(proc.stderr.splitlines()[-1]))
    assert sorted(m for m in modules if m.startswith(PLAN_ONLY)) == sorted(loaded)
    assert {"tempfile", "secrets"} & modules == set()


def test_a_history_import_of_files_loads_no_github_module(tmp_path) -> None:
    """`history import PATH` needs no `github` extra: only `--github-run(s)` imports the use case fetching
    runs (`cli.history` imports it only when asked)."""
    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, "history", "import", "--store",
                           str(tmp_path / "history.sqlite")], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), check=True)
    loaded = json.loads(proc.stderr)
    assert "ci_policy.cli.history" in loaded
    assert [m for m in loaded if m.startswith(("github", "ci_policy.adapters.github", "ci_policy.app.history_runs"))] \
        == []


def test_a_configuration_without_requires_imports_no_packaging(tmp_path) -> None:
    """`packaging` parses the `requires` specifier only: `plan`, `lint`, `registry` and `list` on a
    configuration without one do not import it; with one, `plan` does and checks it."""
    repo = unit_repo(tmp_path)
    for argv in (["plan", "--event", "push"], ["lint"], ["registry"], ["list", "--stage", "unit"]):
        proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, *argv, "--repo", str(repo), "--no-cache"],
                              capture_output=True, text=True, cwd=tmp_path, env=clean_env())
        loaded = json.loads(proc.stderr.splitlines()[-1])
        assert proc.returncode == 0 and "ci_policy.config.top" in loaded, (argv, proc.stderr)
        assert [m for m in loaded if m.split(".")[0] == "packaging"] == [], argv
    config = repo / ".github" / "ci-policy.yml"
    config.write_text(config.read_text().replace("version: 1\n", "version: 1\nrequires: '>=999'\n"))
    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, "plan", "--event", "push", "--repo", str(repo),
                           "--no-cache"], capture_output=True, text=True, cwd=tmp_path, env=clean_env())
    assert "this repository requires ci_policy >=999" in proc.stderr  # the probe swallows the exit status
    assert "packaging.specifiers" in json.loads(proc.stderr.splitlines()[-1])


LINT_ONLY = ("ci_policy.app.lint", "ci_policy.model.lint", "ci_policy.model.workflows", "ci_policy.read.workflows",
             "ci_policy.plan.limits")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_registry_imports_neither_lint_nor_the_planner(fmt, tmp_path) -> None:
    """`registry` lists the registrations: lint's workflow checks and the plan job's output sizes
    (`plan.limits`) are not imported; the plan document's classes only for `--format json`."""
    from helpers import EXAMPLE_REPO

    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, "registry", "--repo", str(EXAMPLE_REPO),
                           "--no-cache", "--format", fmt], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env())
    loaded = json.loads(proc.stderr.splitlines()[-1])
    assert "ci_policy.app.registry" in loaded and "tests/e2e/test_fsdp_grpo.py" in proc.stdout
    assert [m for m in loaded if m.startswith(LINT_ONLY)] == []
    # The JSON renderer for --format json, and none of the plan document's classes
    # (`test_lint_and_registry_import_no_planner`).
    planner = {"ci_policy.render.jsondoc", "ci_policy.plan.document", "ci_policy.plan.partition"}
    assert planner & set(loaded) == ({"ci_policy.render.jsondoc"} if fmt == "json" else set())


RENDERERS_OF_DOCUMENTS = {"ci_policy.render.github", "ci_policy.render.jsondoc", "ci_policy.plan.document",
                          "ci_policy.read.codec"}


@pytest.mark.parametrize(("fmt", "loaded"), [("text", set()), ("json", {"ci_policy.render.jsondoc"}),
                                             ("github", {"ci_policy.render.github", "ci_policy.render.jsondoc"})])
def test_lint_as_text_imports_no_json_or_github_renderer(fmt, loaded, tmp_path) -> None:
    """`lint`'s text report imports neither the JSON nor the GitHub renderer (nor the plan
    document's classes they import); each other format imports its own."""
    from helpers import EXAMPLE_REPO

    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, "lint", "--repo", str(EXAMPLE_REPO), "--no-cache",
                           "--format", fmt], capture_output=True, text=True, cwd=tmp_path, env=clean_env())
    modules = set(json.loads(proc.stderr.splitlines()[-1]))
    assert "ci_policy.render.report" in modules and ("0 errors" in proc.stdout or '"ok": true' in proc.stdout)
    assert {"ci_policy.render.github", "ci_policy.render.jsondoc"} & modules == loaded
    if fmt == "text":
        assert RENDERERS_OF_DOCUMENTS & modules == set()


# What builds a plan and writes its document: `lint` (its output sizes, `plan.limits`, come from
# the configuration alone) and `registry` build no plan, in any format; the JSON renderer
# imports the plan document's classes and their codec only to write a plan.
PLANNER = ("ci_policy.plan.build", "ci_policy.plan.policy", "ci_policy.plan.selection", "ci_policy.plan.hours",
           "ci_policy.plan.partition", "ci_policy.plan.picking", "ci_policy.plan.document", "ci_policy.read.codec",
           "ci_policy.plan.trust", "ci_policy.plan.results", "ci_policy.plan.filerun")


@pytest.mark.parametrize(("argv", "shown"), [
    (["lint"], "0 errors"), (["lint", "--format", "json"], '"ok": true'), (["lint", "--format", "github"], ""),
    (["registry"], "tests/e2e/test_fsdp_grpo.py"), (["registry", "--format", "json"], "tests/e2e/test_fsdp_grpo.py")])
def test_lint_and_registry_import_no_planner(argv, shown, tmp_path) -> None:
    from helpers import EXAMPLE_REPO

    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, *argv, "--repo", str(EXAMPLE_REPO), "--no-cache"],
                          capture_output=True, text=True, cwd=tmp_path, env=clean_env())
    modules = json.loads(proc.stderr.splitlines()[-1])
    assert shown in proc.stdout and f"ci_policy.cli.{argv[0]}" in modules
    assert set(PLANNER) & set(modules) == set()


# What a plan never uses, whatever its format: a shard's run results, a single file's run (and
# its "did you mean" suggestions, difflib), the decision of a pull request's trust (a plan is
# given its trust: `plan.trust_values`) and the reader of a plan file (`plan.planfile`; a plan's
# inputs are `plan.inputs`); `render.github` names the first two in annotations only. What a
# stage job runs with (`plan.stagejob`) only for `--stage-plans`, which writes it. Nor `uuid`
# (and `platform`) for the outputs' delimiter (`cli.output.output_delimiter`).
NOT_FOR_A_PLAN = ("ci_policy.plan.results", "ci_policy.plan.filerun", "ci_policy.plan.trust", "difflib",
                  "ci_policy.plan.planfile", "uuid", "platform")


@pytest.mark.parametrize(("argv", "stage_job"), [
    ([], False), (["--format", "json"], False), (["--format", "github", "--json-out", "plan.json"], False),
    (["--format", "github", "--json-out", "plan.json", "--stage-plans", "stages"], True)])
def test_a_plan_imports_no_module_of_running_it(argv, stage_job, tmp_path) -> None:
    from helpers import EXAMPLE_REPO

    env = clean_env(GITHUB_OUTPUT=str(tmp_path / "out"), GITHUB_STEP_SUMMARY=str(tmp_path / "summary"))
    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, "plan", "--repo", str(EXAMPLE_REPO), "--event",
                           "pull_request", "--labels-json", '["run-ci-megatron"]', "--diff", "", "--no-cache", *argv],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    modules = json.loads(proc.stderr.splitlines()[-1])
    assert "ci_policy.plan.build" in modules and ("stage" in proc.stdout or (tmp_path / "out").read_text())
    assert set(NOT_FOR_A_PLAN) & set(modules) == set()
    # tempfile makes the files written whole (adapters.files): only a plan that writes one imports it.
    assert ("tempfile" in modules) is ("--json-out" in argv)
    assert ("ci_policy.plan.stagejob" in modules) is stage_job
    if "--json-out" in argv:  # what the plan job hands the stage jobs is written all the same
        assert json.loads((tmp_path / "plan.json").read_text())["stages"]
        assert "matrix<<ghadelimiter_" in (tmp_path / "out").read_text()
    if stage_job:
        assert sorted(p.suffix for p in (tmp_path / "stages").iterdir()) == [".json"] * len(
            json.loads((tmp_path / "plan.json").read_text())["stages"])


PLAN_FILE_MODULES = {"ci_policy.app.plan_files", "ci_policy.plan.planfile", "ci_policy.adapters.inputs",
                     "ci_policy.plan.stagejob", "ci_policy.plan.document", "ci_policy.read.codec",
                     "ci_policy.render.jsondoc"}


@pytest.mark.parametrize(("fmt", "loaded"), [
    ("text", set()),
    # Nor the plan document's classes (test_lint_and_registry_import_no_planner).
    ("json", {"ci_policy.render.jsondoc"})])
def test_list_planning_here_imports_no_plan_file_module(fmt, loaded, tmp_path) -> None:
    """`list` given the plan inputs plans here: the modules reading and checking a plan file
    (`--plan`) are not imported, nor the plan document's classes."""
    from helpers import EXAMPLE_REPO

    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, "list", "--repo", str(EXAMPLE_REPO), "--no-cache",
                           "--event", "push", "--stage", "stage-a-cpu", "--format", fmt], capture_output=True,
                          text=True, cwd=tmp_path, env=clean_env())
    modules = set(json.loads(proc.stderr.splitlines()[-1]))
    assert "tests/fast/test_session_protocol.py" in proc.stdout and "ci_policy.app.planning" in modules
    assert PLAN_FILE_MODULES & modules == loaded


COMPILED_PROBE = """
import json, sys
from ci_policy.cli.main import main
from ci_policy.read.lazyregex import LazyRegex
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted(f"{name}.{attr}" for name, module in list(sys.modules.items())
                                   if name.startswith("ci_policy") for attr, value in vars(module).items()
                                   if isinstance(value, LazyRegex) and value._compiled is not None)))
"""


@pytest.mark.parametrize(("argv", "shown"), [
    (["plan", "--event", "pull_request", "--labels-json", '["run-ci-all"]', "--diff", "", "--format", "json"],
     "tests/test_a.py"),
    (["lint", "--format", "json"], '"ok": true'), (["registry", "--format", "json"], "tests/test_a.py"),
    (["list", "--stage", "unit", "--event", "pull_request", "--diff", ""], "tests/test_a.py")])
def test_a_command_compiles_no_pattern_its_run_does_not_use(argv, shown, tmp_path) -> None:
    """The patterns of what this configuration lacks (image builds, scopes, quarantines, backends,
    markers, environment rules), of a push's SHAs, a revision and a store's URL are compiled at
    their first use (`read.lazyregex`), not when imported."""
    repo = unit_repo(tmp_path)
    proc = subprocess.run([sys.executable, "-c", COMPILED_PROBE, *argv, "--repo", str(repo), "--no-cache"],
                          capture_output=True, text=True, cwd=tmp_path, env=clean_env())
    assert proc.returncode == 0 and shown in proc.stdout, proc.stderr
    assert json.loads(proc.stderr.splitlines()[-1]) == []
    # A pattern that is used is compiled: a push event's SHAs are compared with the zero SHA.
    proc = subprocess.run([sys.executable, "-c", COMPILED_PROBE, "plan", "--event", "push", "--repo", str(repo),
                           "--no-cache", "--base", "0" * 40],
                          capture_output=True, text=True, cwd=tmp_path, env=clean_env())
    assert json.loads(proc.stderr.splitlines()[-1]) == ["ci_policy.plan.policy.ZERO_SHA_RE"], proc.stderr


@pytest.mark.parametrize("argv", [["plan", "--event", "push", "--format", "json"], ["lint", "--format", "json"],
                                  ["registry"], ["list", "--stage", "unit"]])
def test_a_command_imports_no_string_module(argv, tmp_path) -> None:
    """`string` (its `Formatter` reads a suite template: `config.markers.template_fields`) only
    for a configuration with a suite template."""
    repo = unit_repo(tmp_path)
    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, *argv, "--repo", str(repo), "--no-cache"],
                          capture_output=True, text=True, cwd=tmp_path, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    assert "string" not in json.loads(proc.stderr.splitlines()[-1])
    config = repo / ".github" / "ci-policy.yml"
    config.write_text(config.read_text() + "markers: {extra_arguments: {stage: string}, suite: '{stage}-test'}\n")
    proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, "lint", "--repo", str(repo), "--no-cache"],
                          capture_output=True, text=True, cwd=tmp_path, env=clean_env())
    assert proc.returncode == 0 and "0 errors" in proc.stdout, proc.stdout
    assert "string" in json.loads(proc.stderr.splitlines()[-1])
