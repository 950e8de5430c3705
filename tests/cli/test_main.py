"""The command line as a whole: errors and exit codes, help, the entry points, lazy imports.

Most tests call `ci_policy.cli.main([...])` in-process and read stdout/stderr with capsys;
a few run the installed console script and `python -m ci_policy` in a subprocess, which is
also how "no traceback, ever" is checked for bad input.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli.expected import CONFIG, LABELS, write_repo
from helpers import assert_run_golden, clean_env, console_script, in_process, read_golden
from helpers import run_cli as run

from ci_policy.cli import main
from ci_policy.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gpu-repo"
PYTHON = sys.executable




def usage_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


def test_explicit_config_inside_and_outside_the_checkout(example_repo, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(example_repo)
    assert_run_golden(run(["lint", "--config", ".github/ci-policy.yml"], capsys), 0, "cli/lint/example.txt")
    outside = tmp_path / "policy.yml"
    outside.write_text((example_repo / ".github" / "ci-policy.yml").read_text())
    (example_repo / ".github" / "ci-policy.yml").unlink()
    assert_run_golden(run(["lint", "--config", str(outside)], capsys), 0, "cli/lint/example.txt")
    assert_run_golden(run(["registry", "--config", str(outside), "--format", "json"], capsys), 0,
                      "cli/registry/example.json")
    # Without --config the (now missing) default is an error.
    rc, out, err = run(["lint"], capsys)
    assert rc == 1
    assert out == (".github/ci-policy.yml: CP402 path-missing: configuration file "
                   ".github/ci-policy.yml does not exist\n"
                   "    hint: create it or point the configuration at the right configuration file\n"
                   "ci-policy lint: FAILED: 1 error, 0 warnings\n")


# -- usage errors: exit 2 ------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["lint", "--bogus"], "ci-policy: error: unrecognized arguments: --bogus"),
    (["lint", "--format", "xml"],
     "ci-policy lint: error: argument --format: invalid choice: 'xml' (choose from 'text', 'json', 'github')"),
    (["registry", "--format", "github"],
     "ci-policy registry: error: argument --format: invalid choice: 'github' (choose from 'text', 'json')"),
    ([], "ci-policy: error: the following arguments are required: COMMAND"),
    (["frobnicate"], "ci-policy: error: argument COMMAND: invalid choice: 'frobnicate'"),
    (["lint", "--repo"], "ci-policy lint: error: argument --repo: expected one argument"),
    # No abbreviations: a prefix of an option is not that option.
    (["lint", "--rep", "."], "ci-policy: error: unrecognized arguments: --rep ."),
    (["comment", "--event", "e.json"], "ci-policy: error: unrecognized arguments: --event e.json"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    err = usage_error(argv, capsys)
    assert err.startswith("usage: ci-policy")
    assert message in err


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == "ci-policy 0.1.0\n"


# -- bad input: a clear message and exit 1, never a traceback ------------------------------

def _bad_input(tmp_path: Path, case: str) -> tuple[list[str], str]:
    """(extra argv, the message lint must print) of one bad input; only its checkout is written."""
    def repo(name: str, **kw) -> Path:
        return write_repo(tmp_path / name, {"tests/unit/test_ok.py": "def test_ok():\n    pass\n"}, **kw)

    def no_config() -> Path:
        path = repo("no-config")
        (path / ".github" / "ci-policy.yml").unlink()
        return path

    def through_file() -> Path:
        path = repo("through-file",
                    config=CONFIG.replace("version: 1\n", "version: 1\nlabels_file: README/labels.py\n"))
        (path / "README").write_text("not a directory\n")
        return path

    def a_file() -> Path:
        path = tmp_path / "a-file"
        path.write_text("")
        return path

    long_name = "a" * 300
    if case == "missing default config":
        return ["--repo", str(no_config())], (".github/ci-policy.yml: CP402 path-missing: configuration file "
                                              ".github/ci-policy.yml does not exist")
    if case == "missing --config":
        return (["--repo", str(no_config()), "--config", str(tmp_path / "nope.yml")],
                f"configuration file {tmp_path / 'nope.yml'} cannot be read: No such file or directory")
    if case == "invalid YAML":
        return (["--repo", str(repo("invalid-yaml", config="version: 1\n  stages: [\n"))],
                ".github/ci-policy.yml:2:9: CP101 config-invalid-yaml: invalid YAML: "
                "mapping values are not allowed here")
    if case == "broken labels.py":
        return (["--repo", str(repo("broken-labels", labels="KNOWN_LABELS = {\n"))],
                "labels.py:1:16: CP301 labels-syntax-error: labels file labels.py is not valid Python")
    if case == "labels.py without KNOWN_LABELS":
        return (["--repo", str(repo("no-labels", labels="LABELS = {}\n"))],
                "labels.py:1:1: CP302 labels-undefined: labels file labels.py does not define KNOWN_LABELS")
    if case == "labels_file through a regular file":
        return (["--repo", str(through_file())],
                "README/labels.py: CP402 path-missing: labels file README/labels.py does not exist")
    if case == "labels_file name too long":
        too_long = repo("too-long",
                        config=CONFIG.replace("version: 1\n", f"version: 1\nlabels_file: {long_name}/labels.py\n"))
        return ["--repo", str(too_long)], f"cannot read {too_long / long_name}: File name too long"
    if case == "deeply nested labels.py":
        return ["--repo", str(repo("nested", labels=LABELS + "x = a" + ".b" * 300_000 + "\n"))], "too deeply nested"
    if case == "--repo does not exist":
        return ["--repo", str(tmp_path / "missing")], f"repository {tmp_path / 'missing'} is not a directory"
    assert case == "--repo is a file", case
    return ["--repo", str(a_file())], f"repository {a_file()} is not a directory"


BAD_INPUTS = ["missing default config", "missing --config", "invalid YAML", "broken labels.py",
              "labels.py without KNOWN_LABELS", "labels_file through a regular file", "labels_file name too long",
              "deeply nested labels.py",
              "--repo does not exist", "--repo is a file"]


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_a_message_not_a_traceback(case, tmp_path):
    extra, message = _bad_input(tmp_path, case)
    # The console script: its exit code and both streams, with no traceback.
    lint = subprocess.run([console_script(), "lint", *extra], capture_output=True, text=True, env=clean_env(),
                          cwd=tmp_path)
    assert lint.returncode == 1, lint
    assert "Traceback" not in lint.stderr + lint.stdout
    assert message in lint.stdout
    assert lint.stdout.endswith("ci-policy lint: FAILED: 1 error, 0 warnings\n")

    # The other formats and commands of the same input: in process, except the input that is about
    # the depth of the stack, which a subprocess measures as the console script has it.
    def cli(*argv: str) -> subprocess.CompletedProcess:
        if case == "deeply nested labels.py":
            return subprocess.run([console_script(), *argv], capture_output=True, text=True, env=clean_env(),
                                  cwd=tmp_path)
        return in_process(tmp_path, list(argv))

    as_json = cli("lint", "--format", "json", *extra)
    assert as_json.returncode == 1
    data = json.loads(as_json.stdout)
    assert (data["ok"], data["files"], data["registrations"], len(data["errors"])) == (False, None, None, 1)

    registry = cli("registry", *extra)
    assert registry.returncode == 1, registry
    assert registry.stdout == ""
    assert "Traceback" not in registry.stderr
    assert message in registry.stderr
    assert registry.stderr.endswith("ci-policy: 1 error\n")


def test_usage_error_from_the_console_script(tmp_path):
    proc = subprocess.run([console_script(), "lint", "--format", "yaml"], capture_output=True, text=True,
                          env=clean_env(), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "invalid choice: 'yaml'" in proc.stderr and "Traceback" not in proc.stderr


# -- the installed entry points -------------------------------------------------------------

def test_console_script_lint_and_registry(example_repo):
    script = console_script()
    lint = subprocess.run([script, "lint"], capture_output=True, text=True, env=clean_env(), cwd=example_repo)
    assert_run_golden((lint.returncode, lint.stdout, lint.stderr), 0, "cli/lint/example.txt")
    reg = subprocess.run([script, "registry", "--repo", str(example_repo), "--format", "json"],
                         capture_output=True, text=True, env=clean_env(), cwd=example_repo.parent)
    assert_run_golden((reg.returncode, reg.stdout, reg.stderr), 0, "cli/registry/example.json")


def test_python_dash_m(example_repo):
    gh = subprocess.run([PYTHON, "-m", "ci_policy", "lint", "--format", "github"], capture_output=True, text=True,
                        env=clean_env(), cwd=example_repo)
    assert_run_golden((gh.returncode, gh.stdout, gh.stderr), 0, "cli/lint/example-github.txt")
    reg = subprocess.run([PYTHON, "-m", "ci_policy", "registry"], capture_output=True, text=True,
                         env=clean_env(), cwd=example_repo)
    assert_run_golden((reg.returncode, reg.stdout, reg.stderr), 0, "cli/registry/example.txt")
    bad = subprocess.run([PYTHON, "-m", "ci_policy", "registry", "--nope"], capture_output=True, text=True,
                         env=clean_env(), cwd=example_repo)
    assert bad.returncode == 2 and "unrecognized arguments: --nope" in bad.stderr


# -- lazy imports: lint and registry never load an adapter's dependency ---------------------

ADAPTER_MODULES = ("github", "libcst", "psycopg", "psycopg2")


def test_lint_and_registry_do_not_import_adapters(tmp_path):
    code = textwrap.dedent(f"""\
        import contextlib, io, json, sys
        from ci_policy.cli import main
        codes = []
        with contextlib.redirect_stdout(io.StringIO()) as out:
            codes.append(main(["lint", "--repo", {str(EXAMPLE)!r}]))
            codes.append(main(["registry", "--repo", {str(EXAMPLE)!r}, "--format", "json"]))
        modules = sorted(sys.modules)
        import github, libcst, psycopg  # installed here, so their absence above means something
        print(json.dumps({{"codes": codes, "out": out.getvalue(), "modules": modules}}))
        """)
    proc = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=clean_env(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    # Both commands really ran (a crash before importing anything would prove nothing).
    assert result["codes"] == [0, 0]
    assert result["out"] == read_golden("cli/lint/example.txt") + read_golden("cli/registry/example.json")
    assert "ci_policy.model.lint" in result["modules"] and "ci_policy.render" in result["modules"]
    loaded = {m.split(".")[0] for m in result["modules"]}
    assert sorted(loaded & set(ADAPTER_MODULES)) == []



# -- help: every subcommand is described, every option explained -----------------------------

SUBCOMMANDS = ["init", "lint", "registry", "plan", "list", "run", "result", "gate", "tune", "history", "report",
               "file-run", "comment", "pull-request", "report-status", "schema", "completion"]


def subparsers() -> dict[str, argparse.ArgumentParser]:
    [action] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_the_subcommands_in_order(capsys):
    assert list(subparsers()) == SUBCOMMANDS
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ci-policy [-h] [--version] COMMAND ...\n")
    for name in subparsers():
        assert f"\n    {name}" in out, name


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommand_has_a_description_and_every_option_a_help_text(name, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "10000")  # one line per option: its help text is printed whole
    parser = subparsers()[name]
    assert parser.description and parser.description.endswith("."), name
    options = [a for a in parser._actions if a.option_strings]
    assert len(options) >= 3, name  # --help, and the options of the command
    for action in options:
        assert action.help and action.help.strip() and action.help != argparse.SUPPRESS, (name, action.dest)
    # --help prints them: the description, then each option with its text.
    with pytest.raises(SystemExit) as info:
        main([name, "--help"])
    assert info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith(f"usage: ci-policy {name} ")
    assert " ".join(parser.description.split()) in out
    for action in options:
        assert action.option_strings[-1] in out and " ".join(action.help.split()) in out, (name, action.dest)


# completion prints a script in the language of the shell it names: that is its format.
@pytest.mark.parametrize("name", [n for n in SUBCOMMANDS if n not in ("lint", "registry", "completion")])
def test_every_producing_subcommand_offers_text_and_a_second_format(name):
    [fmt] = [a for a in subparsers()[name]._actions if "--format" in a.option_strings]
    assert "text" in fmt.choices and len(fmt.choices) >= 2, fmt.choices
    assert fmt.default == ("json" if name in ("file-run", "schema") else "text")


def test_the_checkout_is_repo_in_every_subcommand_but_comment():
    for name, parser in subparsers().items():
        flags = {s for a in parser._actions for s in a.option_strings}
        if name == "comment":
            assert {"--trusted-repo", "--event-path"} <= flags and not {"--repo", "--event"} & flags
        else:
            assert "--repo" in flags and "--source-root" not in flags, name


def test_a_command_runs_without_the_cycle_collector_and_restores_it(monkeypatch, capsys):
    import gc

    from ci_policy.cli import registry

    seen = []
    monkeypatch.setattr(registry, "run", lambda args: seen.append(gc.isenabled()) or 0)
    assert gc.isenabled()
    assert main(["registry", "--repo", "."]) == 0
    assert seen == [False]
    assert gc.isenabled()
    # Left off by whoever called: left off.
    gc.disable()
    try:
        assert main(["registry", "--repo", "."]) == 0
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert seen == [False, False]


def test_run_turns_the_collector_back_on_before_its_tests(monkeypatch, tmp_path):
    import gc

    from ci_policy.adapters.runner import shard as shard_module

    seen = []

    def fake_run_shard(*args, **kwargs):
        seen.append(gc.isenabled())
        raise SystemExit(0)
    monkeypatch.setattr(shard_module, "run_shard", fake_run_shard)
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    with pytest.raises(SystemExit):
        main(["run", "--repo", str(repo), "--event", "push", "--stage", "stage-a-cpu", "--shard", "0",
              "--no-cache"])
    assert seen == [True]
    assert gc.isenabled()


# -- outputs that cannot be written ----------------------------------------------------------------

@pytest.mark.parametrize("variable", ["GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"])
def test_a_github_file_that_cannot_be_written_is_a_usage_error_naming_it(example_repo, tmp_path, variable):
    files = {"GITHUB_OUTPUT": str(tmp_path / "out"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
             variable: str(tmp_path)}  # a directory
    proc = subprocess.run([console_script(), "plan", "--repo", str(example_repo), "--event", "push", "--format",
                           "github"], capture_output=True, text=True, env=clean_env(**files), check=False)
    assert proc.returncode == 2
    assert proc.stderr == (f"ci-policy plan: error: ${variable}: cannot write {tmp_path}: Is a directory\n"
                           f"    hint: ${variable} must name a writable file (GitHub Actions sets it for each step)\n")


def test_standard_output_that_cannot_be_written_is_not_called_a_checkout_read_error(example_repo):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([console_script(), "registry", "--repo", str(example_repo)], stdout=full,
                              stderr=subprocess.PIPE, text=True, env=clean_env(), check=False)
    assert (proc.returncode, proc.stderr) == (1, "ci-policy registry: error: cannot write the output: "
                                                 "No space left on device\n")
