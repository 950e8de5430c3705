"""Reading a checkout's GitHub Actions workflows as data, for `lint`.

- In: the checkout root and the repo-relative workflows directory.
- Out: `read_workflows(...)`: the `Workflow`s of every `*.yml`/`*.yaml` file directly in
  it (sorted by name) and the problems reading them as `Diagnostic`s; the same in two steps,
  `workflow_texts` (the files read) and `parse_workflow` (one file's text composed, a pure
  function of its path and text, so its result may be stored by the text's hash). A `Workflow` keeps
  what lint compares, with 1-based lines and columns: each job's `runs-on` labels (None
  when absent or an expression), the reusable workflow it calls (`uses`, `with`,
  `secrets`), and every `ci-policy run --stage X` of its `run:` steps (`$GITHUB_JOB`
  is the job's id; any other variable or `${{ }}` expression is dynamic, None), and the
  `permissions:` of the workflow and of each job (`Grants`; None when absent).
- Refused: a symlinked directory or file (CP401, like every read of the checkout), a file
  that cannot be read (CP4xx) or is not YAML (CP601). A missing directory is no workflow.
- Files are read as bytes and parsed with PyYAML's safe composer (through libyaml where PyYAML
  has it, `read.yamlnodes.compose_any`: the same nodes and errors); nothing is executed.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from ci_policy.errors import Diagnostic, InputError
from ci_policy.read.checkout import check_no_symlinks, read_text
from ci_policy.read.yamlnodes import compose_any

INVALID_YAML = "CP601"
_STAGE_OPTION = re.compile(r"(?<![\w-])ci-policy\s+run\b")


@dataclass(frozen=True)
class Located:
    """A scalar value of a workflow and where it is."""

    value: str
    line: int
    col: int


@dataclass(frozen=True)
class StageRun:
    """One `ci-policy run` command: its `--stage` (None when dynamic) and where it is."""

    stage: str | None
    line: int
    col: int | None  # None inside a block scalar, whose lines are not indexed by column


@dataclass(frozen=True)
class Grants:
    """A `permissions:` value and where it is: scope -> level, or a shorthand (`read-all`, `write-all`)."""

    scopes: tuple[tuple[str, str], ...]
    shorthand: str | None
    line: int
    col: int


@dataclass(frozen=True)
class Job:
    id: str
    line: int
    col: int
    runs_on: tuple[str, ...] | None  # None: absent, or an expression decided at run time
    runs_on_at: Located | None
    uses: Located | None
    with_: tuple[tuple[str, Located], ...]
    secrets: tuple[tuple[str, Located], ...] | str  # "inherit", or the secrets passed
    stage_runs: tuple[StageRun, ...]
    permissions: Grants | None = None


@dataclass(frozen=True)
class Workflow:
    path: str
    triggers: tuple[str, ...]
    jobs: tuple[Job, ...]
    permissions: Grants | None = None


def read_workflows(root: Path, directory: str) -> tuple[list[Workflow], list[Diagnostic]]:
    workflows: list[Workflow] = []
    problems: list[Diagnostic] = []
    for item in workflow_texts(root, directory):
        found = item if isinstance(item, Diagnostic) else parse_workflow(*item)
        if isinstance(found, Diagnostic):
            problems.append(found)
        else:
            workflows.append(found)
    return workflows, problems


def workflow_texts(root: Path, directory: str) -> list[tuple[str, str] | Diagnostic]:
    """(path, text) of each workflow file of `directory`, sorted by name, or why it cannot be read."""
    try:
        st = check_no_symlinks(root, directory, what="workflows directory")
    except InputError as exc:
        return [exc.diagnostic]
    if st is None or not stat.S_ISDIR(st.st_mode):
        return []
    names = sorted(n for n in os.listdir(root / directory) if n.endswith((".yml", ".yaml")))
    out: list[tuple[str, str] | Diagnostic] = []
    for name in names:
        rel = str(PurePosixPath(directory) / name) if directory != "." else name
        try:
            out.append((rel, read_text(root, rel, what="workflow")))
        except InputError as exc:
            out.append(exc.diagnostic)
    return out


def parse_workflow(rel: str, text: str) -> Workflow | Diagnostic:
    """The `Workflow` of the text of file `rel`, or why it is not YAML (CP601): a pure function of both."""
    try:
        node = compose_any(text, strict=False)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return Diagnostic(
            f"workflow {rel} is not valid YAML: {getattr(exc, 'problem', None) or exc}", path=rel,
            line=mark.line + 1 if mark else None, col=mark.column + 1 if mark else None, code=INVALID_YAML,
            hint="GitHub cannot run it either; fix the YAML")
    return _workflow(rel, node)


def _at(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _pairs(node: yaml.Node | None) -> list[tuple[str, yaml.Node, yaml.Node]]:
    if not isinstance(node, yaml.MappingNode):
        return []
    return [(str(k.value), k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)]


def _get(node: yaml.Node | None, name: str) -> yaml.Node | None:
    for key, _k, value in _pairs(node):
        if key == name:
            return value
    return None


def _scalars(node: yaml.Node | None) -> tuple[tuple[str, Located], ...]:
    out = []
    for key, _k, value in _pairs(node):
        if isinstance(value, yaml.ScalarNode):
            out.append((key, Located(str(value.value), *_at(value))))
    return tuple(out)


def _workflow(rel: str, root: yaml.Node | None) -> Workflow:
    on = _get(root, "on")
    if isinstance(on, yaml.ScalarNode):
        triggers: tuple[str, ...] = (str(on.value),)
    elif isinstance(on, yaml.SequenceNode):
        triggers = tuple(str(n.value) for n in on.value if isinstance(n, yaml.ScalarNode))
    else:
        triggers = tuple(key for key, _k, _v in _pairs(on))
    jobs = tuple(_job(key, k, v) for key, k, v in _pairs(_get(root, "jobs")))
    return Workflow(path=rel, triggers=triggers, jobs=jobs, permissions=_grants(_get(root, "permissions")))


def _grants(node: yaml.Node | None) -> Grants | None:
    if node is None:
        return None
    line, col = _at(node)
    if isinstance(node, yaml.ScalarNode):
        return Grants(scopes=(), shorthand=str(node.value), line=line, col=col)
    return Grants(scopes=tuple((key, located.value) for key, located in _scalars(node)), shorthand=None, line=line,
                  col=col)


def _job(job_id: str, key: yaml.Node, node: yaml.Node) -> Job:
    runs_on_node = _get(node, "runs-on")
    runs_on: tuple[str, ...] | None = None
    runs_on_at = None
    if runs_on_node is not None:
        runs_on_at = Located("", *_at(runs_on_node))
        labels_node = _get(runs_on_node, "labels") if isinstance(runs_on_node, yaml.MappingNode) else runs_on_node
        if isinstance(labels_node, yaml.ScalarNode):
            labels = [str(labels_node.value)]
        elif isinstance(labels_node, yaml.SequenceNode):
            labels = [str(n.value) for n in labels_node.value if isinstance(n, yaml.ScalarNode)]
        else:
            labels = []
        if labels and not any("${{" in label for label in labels):
            runs_on = tuple(labels)
    uses_node = _get(node, "uses")
    uses = Located(str(uses_node.value), *_at(uses_node)) if isinstance(uses_node, yaml.ScalarNode) else None
    secrets_node = _get(node, "secrets")
    secrets: tuple[tuple[str, Located], ...] | str = (
        "inherit" if isinstance(secrets_node, yaml.ScalarNode) and secrets_node.value == "inherit"
        else _scalars(secrets_node))
    runs: list[StageRun] = []
    steps = _get(node, "steps")
    for step in steps.value if isinstance(steps, yaml.SequenceNode) else []:
        script = _get(step, "run")
        if isinstance(script, yaml.ScalarNode):
            runs += _stage_runs(str(script.value), job_id, script)
    return Job(id=job_id, line=_at(key)[0], col=_at(key)[1], runs_on=runs_on, runs_on_at=runs_on_at, uses=uses,
               with_=_scalars(_get(node, "with")), secrets=secrets, stage_runs=tuple(runs),
               permissions=_grants(_get(node, "permissions")))


def _stage_runs(script: str, job_id: str, node: yaml.ScalarNode) -> list[StageRun]:
    """Every `ci-policy run` of a `run:` script, with its `--stage` resolved where it is static."""
    line, col = _at(node)
    out = []
    for match in _STAGE_OPTION.finditer(script):
        # A block scalar's text starts on the line after its indicator (`|`, `>-`).
        offset = script.count("\n", 0, match.start()) + (1 if node.style in ("|", ">") else 0)
        rest = script[match.end():].replace("\\\n", " ")
        if node.style != ">":
            rest = rest.split("\n", 1)[0]
        try:
            words = shlex.split(rest, comments=True)
        except ValueError:
            words = rest.split()
        stage = None
        for i, word in enumerate(words):
            if word == "--stage" and i + 1 < len(words):
                stage = words[i + 1]
                break
            if word.startswith("--stage="):
                stage = word[len("--stage="):]
                break
        else:
            continue  # no --stage: not a stage job (e.g. `ci-policy run --help`)
        if stage in ("$GITHUB_JOB", "${GITHUB_JOB}"):
            stage = job_id
        elif stage is not None and ("$" in stage or "`" in stage):
            stage = None
        out.append(StageRun(stage=stage, line=line + offset, col=col if offset == 0 else None))
    return out
