"""The adoption page (docs/adopting.md): every example on it runs here, so it cannot drift.

Each fenced block of the page follows a marker comment naming what it is and how it is checked:

- `<!-- example: SETUP -->`: a console session (`$ ci-policy ...` lines, each followed by the
  output it prints). Each runs in its own copy of examples/gpu-repo prepared by SETUP (the
  repository before `init`, before `init --workflows`, with a grant left out), through the CLI's
  own `main`, and prints exactly the lines shown, with the exit code SETUP expects.
- `<!-- excerpt: FILE -->`: consecutive lines of FILE, as they are in it (the caller file, which
  the `before-workflows` example writes byte for byte).
- `<!-- message: NAME -->`: what a tool prints or posts at one step of the fork PR walk-through,
  produced here: `ci-policy result` on the plan of the step (with the wave jobs' results the
  pipeline gives it; tests/test_pr_check_scenarios.py drives the same steps through the
  pipeline's jobs) and `ci-policy comment` against the fake GitHub (tests/github_fake.py).

Also: the jobs table's grants are the caller file's `permissions:`, and every relative link of
the page (and the README's link to it) resolves to a file and, with a fragment, to a heading.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from github_world import HEAD, PR
from helpers import EXAMPLE_REPO, ROOT
from workflow_eval import Event, call_event, simulate

from ci_policy.cli import main

PAGE = ROOT / "docs" / "adopting.md"
CALLER = ".github/workflows/ci-policy.yml"
MOVED = "feedfacecafebeef00112233445566778899aabb"  # the contributor's next push
RUN_ID = 8123  # the PR's pull_request run of the caller file
WAVE_JOBS = ("stages-0", "stages-1", "stages-2", "stages-3")
MARKER = re.compile(r"<!-- (example|excerpt|message): (\S+) -->")
FENCE = re.compile(r"^```(\S*)$")


@dataclass(frozen=True)
class Block:
    kind: str      # example | excerpt | message
    name: str      # the setup, the file or the message
    line: int      # the fence's line on the page
    text: str


def blocks(text: str) -> list[Block]:
    """Every fenced block of the page, with the marker on the line before its fence."""
    lines = text.splitlines()
    found, i = [], 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            end = next(j for j in range(i + 1, len(lines)) if lines[j] == "```")
            marker = MARKER.fullmatch(lines[i - 1]) if i else None
            assert marker, f"docs/adopting.md:{i + 1}: a fenced block without a marker comment on the line before it"
            found.append(Block(marker[1], marker[2], i + 1, "\n".join(lines[i + 1:end])))
            i = end
        i += 1
    return found


PAGE_BLOCKS = blocks(PAGE.read_text(encoding="utf-8"))


def of_kind(kind: str) -> list[Block]:
    return [b for b in PAGE_BLOCKS if b.kind == kind]


# -- examples: the page's console sessions --------------------------------------------------------

def copy_example(dest: Path) -> Path:
    shutil.copytree(EXAMPLE_REPO, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


def before_init(repo: Path) -> None:
    """A repository that marks its tests and has adopted nothing yet."""
    for rel in (".github/ci-policy.yml", "labels.py", ".github/ci-commands.json", CALLER):
        (repo / rel).unlink()


def before_workflows(repo: Path) -> None:
    (repo / CALLER).unlink()


def grant_missing(repo: Path) -> None:
    """The pipeline job without its `pull-requests: read` line (the page says which line)."""
    text = (repo / CALLER).read_text(encoding="utf-8")
    [line] = [line for line in text.splitlines(keepends=True)
              if line.strip().startswith("pull-requests: read  # the plan job reads the PR")]
    (repo / CALLER).write_text(text.replace(line, ""), encoding="utf-8")


# setup -> (prepare the copy, the exit code of each command)
SETUPS: dict[str, tuple[Callable[[Path], None], int]] = {
    "before-init": (before_init, 0),
    "before-workflows": (before_workflows, 0),
    "grant-missing": (grant_missing, 1),
}


def session(block: Block) -> list[tuple[list[str], str]]:
    """The block's commands, each with the output shown after it."""
    steps: list[tuple[list[str], list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            steps.append((shlex.split(line[2:]), []))
        else:
            assert steps, f"docs/adopting.md:{block.line}: output before any `$ ` command"
            steps[-1][1].append(line)
    return [(argv, "".join(f"{line}\n" for line in out)) for argv, out in steps]


def test_the_page_has_the_examples_this_test_checks():
    assert [b.name for b in of_kind("example")] == list(SETUPS)
    assert [(b.kind, b.name) for b in PAGE_BLOCKS if b.kind not in ("example", "excerpt", "message")] == []


@pytest.mark.parametrize("block", of_kind("example"), ids=lambda b: b.name)
def test_each_console_example_prints_what_the_page_shows(block, tmp_path, monkeypatch, capsys):
    prepare, rc = SETUPS[block.name]
    repo = copy_example(tmp_path / "repo")
    prepare(repo)
    monkeypatch.chdir(repo)
    steps = session(block)
    assert steps
    for argv, shown in steps:
        assert argv[0] == "ci-policy", f"docs/adopting.md:{block.line}: not a ci-policy command: {argv}"
        capsys.readouterr()
        assert main(argv[1:]) == rc
        out, err = capsys.readouterr()
        assert (out, err) == (shown, "")


def test_init_workflows_on_the_page_writes_the_example_caller_file(tmp_path, monkeypatch, capsys):
    [block] = [b for b in of_kind("example") if b.name == "before-workflows"]
    repo = copy_example(tmp_path / "repo")
    before_workflows(repo)
    monkeypatch.chdir(repo)
    [(argv, _shown)] = session(block)
    assert main(argv[1:]) == 0
    assert (repo / CALLER).read_bytes() == (EXAMPLE_REPO / CALLER).read_bytes()


# -- the caller file: the excerpt and the grants table ------------------------------------------

def test_the_caller_excerpt_is_the_example_file_as_it_is():
    [block] = of_kind("excerpt")
    assert block.name == f"examples/gpu-repo/{CALLER}"
    lines, shown = (ROOT / block.name).read_text(encoding="utf-8").splitlines(), block.text.splitlines()
    starts = [i for i in range(len(lines)) if lines[i:i + len(shown)] == shown]
    assert len(starts) == 1, "the excerpt is not one run of consecutive lines of the file"
    # It is the whole pipeline job, the one whose result is the required check.
    job = yaml.safe_load(block.text)
    assert list(job) == ["pipeline"] and job["pipeline"]["name"] == "pr-test"


def grants_table() -> dict[str, dict[str, str]]:
    """The page's jobs table: job id -> the `scope: level` grants of its last cell."""
    text = PAGE.read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    table = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        if len(cells) == 4 and "grants" not in cells[0]:
            job = re.match(r"`([a-z-]+)`", cells[0])
            grants = re.findall(r"`([a-z-]+): (read|write|none)`", cells[3])
            if job and grants:
                table[job[1]] = dict(grants)
    return table


def test_the_jobs_table_names_each_jobs_grants_as_the_caller_file_holds_them():
    caller = yaml.safe_load((EXAMPLE_REPO / CALLER).read_text(encoding="utf-8"))
    assert caller["permissions"] == {}
    assert grants_table() == {job: spec["permissions"] for job, spec in caller["jobs"].items()}


# -- the walk-through's messages ----------------------------------------------------------------

def result_of(tmp: Path, capsys, *, trust: str, labels: list[str], waves: tuple[str, ...]) -> str:
    """`ci-policy result` as the result job runs it, on the plan of PR #7 (megatron.py changed)."""
    diff, plan = tmp / "pr.diff", tmp / f"plan-{trust}-{len(labels)}.json"
    diff.write_bytes(b"M\0minirl/backends/megatron.py\0")
    assert main(["plan", "--repo", str(EXAMPLE_REPO), "--event", "pull_request", "--labels-json", json.dumps(labels),
                 "--diff", str(diff), "--trust", trust, "--json-out", str(plan), "--format", "json"]) == 0
    needs = {"plan": "success", "images": "skipped", **dict(zip(WAVE_JOBS, waves, strict=True))}
    capsys.readouterr()
    main(["result", "--plan", str(plan), "--head-sha", HEAD,
          "--needs-json", json.dumps({job: {"result": result} for job, result in needs.items()})])
    return capsys.readouterr().out


def test_the_walk_through_shows_what_the_tools_print(world, tmp_path, capsys):
    gh = world.gh
    gh.pulls[PR].author_association = "CONTRIBUTOR"  # an outside contributor's fork
    run = gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="success", run_id=RUN_ID)

    def comment(body: str, login: str) -> tuple[str, list[str]]:
        posted = len(gh.comments)
        outcome = world.run(body, login=login)
        assert outcome.rc == 0 and outcome.err == ""
        run.update(status="completed", conclusion="failure")  # each re-run finished, failing
        return outcome.out, [c["body"] for c in gh.comments[posted:]]

    labelled, label_replies = comment("/run-ci-megatron", "tom")
    assert label_replies == [] and gh.full_reruns == [RUN_ID]  # a reaction, no reply: the run says it
    _out, [approved] = comment(f"/ok-to-test {HEAD[:16]}", "maria")
    assert gh.full_reruns == [RUN_ID, RUN_ID]
    rerun_failed, rerun_replies = comment("/rerun-failed-ci", "maria")
    assert rerun_replies == [] and gh.reruns == [RUN_ID]
    gh.pulls[PR].head_sha = MOVED
    _out, [stale] = comment(f"/ok-to-test {HEAD}", "maria")

    cpu_only = ("success", "skipped", "skipped", "skipped")
    produced = {
        "result-awaiting": result_of(tmp_path, capsys, trust="untrusted", labels=[], waves=cpu_only),
        "result-awaiting-labels": result_of(tmp_path, capsys, trust="approved", labels=[], waves=cpu_only),
        "gateway-log": labelled + rerun_failed,
        "reply-ok-to-test": approved,
        "result-lane-failed": result_of(tmp_path, capsys, trust="approved", labels=["run-ci-megatron"],
                                        waves=("failure", "skipped", "skipped", "skipped")),
        "reply-stale-ok-to-test": stale,
    }
    assert {b.name: b.text for b in of_kind("message")} == {name: text.rstrip("\n") for name, text in produced.items()}


def test_closing_the_pr_cancels_its_lanes_in_the_group_the_page_names():
    """The `closed` run of the caller's pipeline job takes the PR's group, cancelling the running
    run's lanes, and runs no job."""
    caller = yaml.safe_load((EXAMPLE_REPO / CALLER).read_text(encoding="utf-8"))
    pipeline = yaml.safe_load((ROOT / ".github/workflows/pr-pipeline.yml").read_text(encoding="utf-8"))
    payload = {"action": "closed", "number": PR, "pull_request": {"number": PR, "labels": []}}
    sim = simulate(pipeline, call_event(caller, "pipeline", pipeline, Event("pull_request", payload)))
    [named] = re.findall(r"concurrency group `([^`]+)`", PAGE.read_text(encoding="utf-8"))
    assert sim.concurrency == {"group": named, "cancel-in-progress": True}
    assert sim.ran() == []


# -- links ----------------------------------------------------------------------------------------

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading (MkDocs' and MyST's agree for these): lower case, punctuation
    but `-` and `_` dropped, spaces to `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (outside fenced code), repeats numbered as GitHub does."""
    found: set[str] = set()
    repeats: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = re.match(r"#{1,6} (.+)", line)
        if heading and not fenced:
            base = slug(heading[1])
            found.add(f"{base}-{repeats[base]}" if base in repeats else base)
            repeats[base] = repeats.get(base, 0) + 1
    return found


def test_every_relative_link_resolves_to_a_file_and_heading():
    links = LINK.findall(PAGE.read_text(encoding="utf-8"))
    relative = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert relative
    for link in relative:
        target, _, fragment = link.partition("#")
        path = (PAGE.parent / target).resolve() if target else PAGE
        assert path.exists(), f"docs/adopting.md links to {link}: no such file"
        if fragment:
            assert fragment in anchors(path), f"docs/adopting.md links to {link}: no such heading"



def test_the_readme_links_the_page():
    assert "](docs/adopting.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_manual_example_of_a_stage_with_a_command_is_a_valid_stage():
    from ci_policy.config.top import parse_config

    text = (ROOT / "docs" / "manual" / "stage-commands.md").read_text(encoding="utf-8")
    section = text[text.index("# Suites without markers"):]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    config = parse_config("version: 1\ndiscovery: {roots: [tests]}\n" + block.group(1))
    [stage] = config.stages
    assert (stage.name, stage.command, stage.working_directory, stage.paths, stage.est_time, stage.timeout_per_file,
            stage.diff_pruned) == ("sgl-kernel", ("pytest", "-q", "tests/"), "sgl-kernel", ("sgl-kernel/**",), 1800,
                                   3600, True)
