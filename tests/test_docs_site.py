"""The documentation site (mkdocs.yml, docs/): generated from the code where it can be, built
strictly, and every example on it run.

- The generated reference pages (`python -m ci_policy.cli.docs --update docs`) are what the code
  generates now: the configuration's every key (from the field tables), every subcommand and
  option (from the parsers), every diagnostic code on its own page (and no page of a code that
  does not exist), every JSON schema, every environment variable the package names.
- Each diagnostic example really produces its code (the generator runs it; one that does not
  fails it).
- `mkdocs build --strict` passes: no broken link or anchor, no page left out of the navigation.
- Every console example of a hand-written page (`<!-- example: SETUP -->` before a ```console
  block) runs against the bundled example repository and prints exactly what the page shows
  (`pytest --regen-goldens` rewrites the shown output); every excerpt (`<!-- excerpt: FILE -->`)
  is consecutive lines of FILE. docs/adopting.md has its own harness (tests/test_docs.py).
- The README stays under 10 KB, keeps the Quickstart's two commands, and links into the site.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import helpers
import pytest
from helpers import EXAMPLE_REPO, ROOT

from ci_policy.cli import docs as docs_cli
from ci_policy.cli.main import build_parser, main
from ci_policy.config.path import DEFAULT_CONFIG
from ci_policy.config.reference import _tables
from ci_policy.config.top import TOP, parse_config
from ci_policy.errors import CODES
from ci_policy.render import docs as pages
from ci_policy.render import schemas

DOCS = ROOT / "docs"
GENERATED = set(pages.page_paths())


def read(rel: str) -> str:
    return (DOCS / rel).read_text(encoding="utf-8")


# -- the generated pages ---------------------------------------------------------------------------

def test_the_generated_pages_are_what_the_code_generates():
    if helpers.REGENERATE:
        docs_cli.update(DOCS)
    assert docs_cli.stale(DOCS) == [], "run python -m ci_policy.cli.docs --update docs"
    assert docs_cli.cli(["--check", str(DOCS)]) == 0


def test_the_paths_of_the_generated_pages_are_the_pages_generated():
    assert list(docs_cli.generate(DOCS)) == pages.page_paths()


def test_check_names_a_stale_page(tmp_path, capsys):
    copy = tmp_path / "docs"
    shutil.copytree(DOCS, copy)
    (copy / "reference" / "cli.md").write_text("old\n", encoding="utf-8")
    (copy / "reference" / "diagnostics" / "CP102.md").unlink()
    assert docs_cli.cli(["--check", str(copy)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{copy}/reference/cli.md: stale; run python -m ci_policy.cli.docs --update {copy}",
        f"{copy}/reference/diagnostics/CP102.md: stale; run python -m ci_policy.cli.docs --update {copy}"]


def test_every_code_has_a_page_and_every_page_is_a_code():
    on_disk = {p.stem for p in (DOCS / "reference" / "diagnostics").glob("CP*.md")}
    assert on_disk == set(CODES)
    index = read("reference/diagnostics/index.md")
    assert re.findall(r"\[(CP\d{3})\]\(\1\.md\)", index) == list(CODES)
    for code, (name, message) in CODES.items():
        page = read(f"reference/diagnostics/{code}.md")
        assert page.splitlines()[2] == f"# {code} {name}"
        assert f"```text\n{message}\n```" in page


def test_a_code_without_an_explanation_or_an_explanation_without_a_code_is_refused():
    _baseline, explained = docs_cli.load_data(DOCS)
    fewer = {code: e for code, e in explained.items() if code != "CP102"}
    with pytest.raises(ValueError, match=r"codes without an explanation: \['CP102'\]"):
        pages.diagnostic_pages(fewer, {})
    with pytest.raises(ValueError, match=r"explanations of no code: \['CP999'\]"):
        pages.diagnostic_pages({**explained, "CP999": explained["CP102"]}, {})


def test_each_example_shows_its_own_code_and_one_that_does_not_is_refused():
    baseline, explained = docs_cli.load_data(DOCS)
    with_example = [code for code, e in explained.items() if e.example is not None]
    # Every code whose tests trigger it from files has an example; the rest need a symlink, an
    # unreadable, oversized or non-UTF-8 file, a file name no page can show, or (CP909) a date a week
    # from the day the page is written; the test history's (CP7xx) are `report`'s, never lint's.
    assert sorted(set(CODES) - set(with_example)) == ["CP100", "CP401", "CP404", "CP405", "CP406", "CP407",
                                                       "CP408", "CP701", "CP702", "CP909"]
    for code in with_example:
        page = read(f"reference/diagnostics/{code}.md")
        shown = page.split("`ci-policy lint` reports:\n\n```text\n", 1)[1].split("\n```", 1)[0]
        assert re.search(rf"(^|: )(warning: )?{code} {CODES[code][0]}: ", shown.splitlines()[0]), code
    with pytest.raises(ValueError, match="the example of CP102 does not produce CP102"):
        docs_cli.run_example("CP102", baseline, {"tests/e2e/test_new.py": "x = 1\n"})


def test_every_configuration_key_is_in_the_configuration_page():
    page = read("reference/configuration.md")
    for table in _tables(TOP):
        title = "Top level" if table is TOP else f"`{table.title}`"
        section = page.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
        assert [row.split("`")[1] for row in section.splitlines() if row.startswith("| `")] == \
            [key.name for key in table.keys], table.title


def test_every_command_and_option_is_in_the_command_line_page():
    page = read("reference/cli.md")
    parser = build_parser()
    commands = pages.commands(parser)
    top = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    assert [name for name, _sub in commands if " " not in name] == list(top[0].choices)
    assert re.findall(r"^## `ci-policy ([a-z -]+)`$", page, re.M) == [name for name, _sub in commands]
    for name, sub in commands:
        section = page.split(f"\n## `ci-policy {name}`\n", 1)[1].split("\n## ", 1)[0]
        rows = [row.split("`")[1] for row in section.splitlines() if row.startswith("| `")]
        written = [written for written, _action in pages.options(sub)]
        assert rows == written, name
        every = {s for action in sub._actions if action.help != argparse.SUPPRESS
                 for s in action.option_strings} - {"-h", "--help"}
        assert every == {s for row in rows for s in row.split("/") if s.startswith("-")}, name


def test_nested_subcommands_and_suppressed_options_are_handled():
    """A subcommand with subcommands of its own gets a section per subcommand; an option `--help`
    does not show is not listed."""
    parser = argparse.ArgumentParser(prog="ci-policy")
    sub = parser.add_subparsers(dest="command")
    report = sub.add_parser("report", description="Report.")
    report.add_argument("--hidden", help=argparse.SUPPRESS)
    inner = report.add_subparsers(dest="what")
    inner.add_parser("show", description="Show one.").add_argument("--since", metavar="DATE", help="from DATE")
    page = pages.cli_page(parser)
    assert [name for name, _p in pages.commands(parser)] == ["report", "report show"]
    assert re.findall(r"^## `ci-policy ([a-z -]+)`$", page, re.M) == ["report", "report show"]
    assert "--hidden" not in page
    assert "| `--since` | `DATE` |  | from DATE |" in page
    assert "[`ci-policy report show`](#ci-policy-report-show)" in page


def test_every_json_schema_is_in_the_json_page():
    page = read("reference/json.md")
    assert pages.json_documents() == tuple(name for name in schemas.NAMES if name != "config")
    assert re.findall(r"^## `([a-z-]+)`$", page, re.M) == list(pages.json_documents())
    for name in pages.json_documents():
        assert schemas.outline(name).rstrip("\n") in page


# The names of variables in the package's source: looked up in os.environ, or a CI_POLICY_ name.
LOOKUP = re.compile(r"""(?:environ\.get\(|environ\[|getenv\()\s*["']([A-Z][A-Z0-9_]*)["']""")
OWN = re.compile(r"""["']\$?(CI_POLICY_[A-Z0-9_]+)["'=]""")


def test_the_environment_page_lists_every_variable_the_package_names():
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "ci_policy").rglob("*.py")
                       if p.name != "docs.py")
    named = set(LOOKUP.findall(source)) | set(OWN.findall(source))
    listed = {v.name for v in pages.ENVIRONMENT}
    assert named - listed == set(), "variables the package reads that the environment page does not list"
    assert [name for name in sorted(listed) if name not in source] == []
    page = read("reference/environment.md")
    assert [v.name for v in pages.ENVIRONMENT if f"| `{v.name}` |" not in page] == []


def test_the_schemastore_entry_names_the_configuration_file_and_its_schema():
    entry = pages.schemastore_entry()
    assert entry["fileMatch"] == [f"**/{DEFAULT_CONFIG}"]
    assert entry["url"] == schemas.schema("config")["$id"]
    assert json.dumps(entry, indent=2) in read("reference/configuration.md")


# -- the site builds strictly -----------------------------------------------------------------------

def test_the_site_builds_strictly(tmp_path):
    mkdocs = Path(sys.executable).parent / "mkdocs"
    assert mkdocs.exists(), "mkdocs is not installed next to the test interpreter (the test extra installs it)"
    proc = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "site" / "reference" / "diagnostics" / "CP102" / "index.html").is_file()
    assert "WARNING" not in proc.stderr


# -- the examples of the hand-written pages ----------------------------------------------------------

MARKER = re.compile(r"<!-- (example|excerpt): (\S+) -->")
FENCE = re.compile(r"^(`{3,})(\S*)$")
HAND_WRITTEN = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
                      if p.relative_to(DOCS).as_posix() not in GENERATED | {"adopting.md"})


def fenced(rel: str) -> list[tuple[int, int, str | None, str | None, str, str]]:
    """Each fenced block of a page: (first line, end line, marker kind, marker name, language, text)."""
    lines = read(rel).splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i].strip())
        if fence:
            indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == fence[1])
            marker = MARKER.fullmatch(lines[i - 1].strip()) if i else None
            text = "\n".join(line.removeprefix(indent) for line in lines[i + 1:end])
            found.append((i, end, marker[1] if marker else None, marker[2] if marker else None, fence[2], text))
            i = end
        i += 1
    return found


def before_init(repo: Path) -> None:
    for rel in (".github/ci-policy.yml", "labels.py", ".github/ci-commands.json", ".github/workflows/ci-policy.yml"):
        (repo / rel).unlink()


# setup -> how the copy of examples/gpu-repo is prepared (`../pr-42.diff` is beside it).
SETUPS = {"gpu-repo": lambda repo: None, "before-init": before_init}

EXAMPLES = [(rel, start, name, text) for rel in HAND_WRITTEN
            for start, _end, kind, name, _lang, text in fenced(rel) if kind == "example"]
EXCERPTS = [(rel, start, name, text) for rel in HAND_WRITTEN
            for start, _end, kind, name, _lang, text in fenced(rel) if kind == "excerpt"]


COMMAND = re.compile(r"^\s*(\$ )?ci-policy [a-z-]+( |$)")


def test_every_command_shown_on_a_page_is_an_example_that_runs():
    """A console block, a `$ ` line or a `ci-policy` command line outside a marked example would not
    be checked (an output line such as `ci-policy result: FAIL` is not a command, nor is a workflow's
    `run:` in a YAML block, which the workflow tests check)."""
    unchecked = [f"{rel}:{start + 1}" for rel in HAND_WRITTEN for start, _end, kind, _name, lang, text in fenced(rel)
                 if kind != "example" and (lang == "console" or any(
                     line.startswith("$ ") or (lang != "yaml" and COMMAND.match(line)) for line in text.splitlines()))]
    assert unchecked == []
    assert {name for _rel, _start, name, _text in EXAMPLES} == set(SETUPS)


def run_session(text: str, repo: Path, capsys) -> str:
    """The block's commands run in `repo`, each followed by what it printed."""
    shown = []
    for line in text.splitlines():
        if not line.startswith("$ "):
            continue
        argv = shlex.split(line[2:])
        assert argv[0] == "ci-policy", f"not a ci-policy command: {line}"
        capsys.readouterr()
        main(argv[1:])
        out, err = capsys.readouterr()
        shown += [line, *(out + err).splitlines()]
    return "\n".join(shown)


@pytest.mark.parametrize("rel, start, name, text", EXAMPLES, ids=[f"{e[0]}:{e[1] + 1}" for e in EXAMPLES])
def test_each_example_prints_what_the_page_shows(rel, start, name, text, tmp_path, monkeypatch, capsys):
    repo = tmp_path / "gpu-repo"
    shutil.copytree(EXAMPLE_REPO, repo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    shutil.copy(ROOT / "examples" / "pr-42.diff", tmp_path / "pr-42.diff")
    SETUPS[name](repo)
    monkeypatch.chdir(repo)
    actual = run_session(text, repo, capsys)
    if helpers.REGENERATE and actual != text:
        lines = read(rel).splitlines(keepends=True)
        end = next(j for j in range(start + 1, len(lines)) if lines[j].strip() == "```")
        (DOCS / rel).write_text("".join(lines[:start + 1]) + actual + "\n" + "".join(lines[end:]), encoding="utf-8")
        return
    assert actual == text, f"docs/{rel}:{start + 1}: the example prints otherwise (pytest --regen-goldens rewrites it)"


@pytest.mark.parametrize("rel, start, name, text", EXCERPTS, ids=[f"{e[0]}:{e[1] + 1}" for e in EXCERPTS])
def test_each_excerpt_is_consecutive_lines_of_its_file(rel, start, name, text):
    lines, shown = (ROOT / name).read_text(encoding="utf-8").splitlines(), text.splitlines()
    assert any(lines[i:i + len(shown)] == shown for i in range(len(lines))), f"docs/{rel}:{start + 1}"


# A configuration fragment on a guide, an explanation or a manual page, checked as part of a whole
# file (the YAML of docs/adopting/ is workflows, which the workflow tests check).
FRAGMENTS = [(rel, start, text) for rel in HAND_WRITTEN if rel.startswith(("guides/", "explanation/", "manual/"))
             for start, _end, _kind, _name, lang, text in fenced(rel) if lang == "yaml"]


@pytest.mark.parametrize("rel, start, text", FRAGMENTS, ids=[f"{f[0]}:{f[1] + 1}" for f in FRAGMENTS])
def test_each_configuration_fragment_of_a_guide_is_valid(rel, start, text):
    whole = "version: 1\ndiscovery: {roots: [tests]}\n"
    if "stages:" not in text:
        whole += "stages:\n  - {name: cpu, backend: cpu}\n"
    parse_config(whole + text + "\n", f"docs/{rel}")


def test_the_dialect_markers_of_the_sglang_guide_register_what_the_guide_says(tmp_path, capsys):
    """The guide's dialect configuration and marker calls, in a checkout with a stage for each suite:
    every call is a registration of the suite its `suite=` or its comment names, on its backend."""
    [dialect, *_rest] = [text for _s, _e, _k, _n, lang, text in fenced("guides/sglang-shaped.md") if lang == "yaml"]
    [calls] = [text for _s, _e, _k, _n, lang, text in fenced("guides/sglang-shaped.md") if lang == "python"]
    expected = [(re.search(r'suite="([^"]+)"|# suite (\S+)', line).group(1, 2), line.split("(")[0])
                for line in calls.splitlines()]
    expected = [(suite or commented, marker) for (suite, commented), marker in expected]
    backend = {"register_cuda_ci": "cuda", "register_amd_ci": "rocm", "register_npu_ci": "npu"}
    stages = "".join(f"  - {{name: {suite}, backend: {backend[marker]}, runs_on: [x]}}\n" for suite, marker in expected)
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "ci-policy.yml").write_text(
        "version: 1\ngpu_requires_labels: false\ndiscovery: {roots: [tests]}\n" + dialect + "\nstages:\n" + stages)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(calls + "\n" + helpers.MAIN_BLOCK)
    capsys.readouterr()
    assert main(["registry", "--repo", str(tmp_path), "--no-cache", "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)["registrations"]
    assert [(r["suite"], r["marker"], r["backend"]) for r in found] == \
        [(suite, marker, backend[marker]) for suite, marker in expected]


# A hand-written page holds one topic: a behaviour change edits the page of that topic, and a reader
# finds it from the navigation (the manual was once one 220 KB page).
MAX_PAGE_BYTES = 40 * 1024


def test_no_hand_written_page_is_too_long_to_find_ones_way_in():
    sizes = {rel: (DOCS / rel).stat().st_size for rel in [*HAND_WRITTEN, "adopting.md"]}
    assert "manual/index.md" in sizes and "adopting.md" in sizes
    assert {rel: size for rel, size in sizes.items() if size > MAX_PAGE_BYTES} == {}


LINK = re.compile(r"\]\((https://github\.com/ci-policy/ci-policy/blob/main/[^)\s#]+)")


def test_every_link_into_the_repository_names_a_file_of_it():
    for rel in sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")):
        for link in LINK.findall(read(rel)):
            path = ROOT / link.removeprefix("https://github.com/ci-policy/ci-policy/blob/main/")
            assert path.exists(), f"docs/{rel} links to {link}: no such file"


def test_the_glossary_defines_each_word_of_the_plan():
    defined = re.findall(r"^\*\*([A-Z][a-z]+)\*\*$", read("concepts.md"), re.M)
    assert {"Stage", "Suite", "Registration", "Scope", "Cadence", "Shard", "Lane", "Wave", "Variant",
            "Gate"} <= set(defined)
    assert "```mermaid\nflowchart" in read("concepts.md")


# -- the README --------------------------------------------------------------------------------------

QUICKSTART = (
    "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/ci-policy plan --repo examples/gpu-repo "
    "--event pull_request --labels-json '[\"run-ci-sglang\", \"documentation\"]' --diff examples/pr-42.diff",
    "bash scripts/test.sh",
)


def test_the_readme_is_short_keeps_the_quickstart_and_links_into_the_site():
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) < 10 * 1024
    text = readme.decode("utf-8")
    assert re.findall(r"```sh\n(.*?)\n```", text, re.S)[:2] == list(QUICKSTART)
    for page in ("docs/getting-started.md", "docs/concepts.md", "docs/adopting.md", "docs/reference/index.md"):
        assert f"]({page})" in text and (ROOT / page).is_file()
