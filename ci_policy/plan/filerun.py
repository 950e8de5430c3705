"""The file-run resolver: where and how `/rerun-test <file>` runs one test file.

- In: a repo-relative test path, the source root of an (untrusted) checkout, optional
  trusted configuration (default: the checkout's own), and an optional image tag.
- Out: a `FilePlan`: `hw` (cpu/cuda/rocm), `suite`, `runs_on` (from the stage config, so
  ROCm files are rerunnable too), `container_image`, `container_options` (the backend's
  devices: `backends.<name>.container_options`, else `DEFAULT_CONTAINER_OPTIONS`) and `timeout_seconds`
  (`max(file_run.min_timeout, ceil(file_run.timeout_factor * est_time))`, at most the
  stage's `timeout_per_file`).
- Reads the checkout only as data: the file's registration through the marker parser,
  and the label allowlist from the checkout's own `labels.py` by `ast`, so a PR that adds
  a label and a test using it can be rerun. Imports nothing of the checkout, and only
  ci_policy's core dependencies.
- Refused: each as its own located `InputError` (a checkout that is not a directory: a
  `UsageError` naming `--repo`): a path that is not a repo-relative `.py` path of safe segments
  (`TEST_PATH_RE`); a symlink anywhere on the path; a path that does not exist (CP402, the hint
  naming a close file beside it or where the path stops); a file that is not a discovered test
  file (roots, patterns, excludes of the configuration); an unregistered file; a file that lacks
  a gate `gates.require` asks of it (CP520, as the plan refuses it); a disabled registration; a
  registration to an external stage; an invalid image tag.
- Which registration: the one of `backend` and/or `stage` when given (else refused, listing
  the file's registrations); with neither, the one enabled registration to a stage that
  ci-policy runs (external stages left out). When there are several, the one of the first
  backend of `file_run.prefer` the file has, if exactly one registration has it (the plan's
  `choice` says so); else refused listing them, so the command names one
  (`/rerun-test FILE STAGE`; the hint offers a backend only where it names one registration).
  An explicit file request ignores labels and cadence.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_policy.config.file_run import IMAGE_TAG_RE
from ci_policy.config.load import load_config
from ci_policy.config.stages import Stage
from ci_policy.config.top import Config
from ci_policy.errors import InputError, InputErrors, UsageError
from ci_policy.gates.declarations import GateDeclaration
from ci_policy.gates.requirements import violations
from ci_policy.model.estimates import apply as apply_estimates
from ci_policy.model.estimates import parse_estimates
from ci_policy.model.registry import Registration
from ci_policy.model.scan import ScanCache
from ci_policy.model.snapshot import optional_labels, scan_text
from ci_policy.model.suppress import apply as apply_suppressions
from ci_policy.plan.jobs import DEFAULT_CPU_RUNNER
from ci_policy.read.checkout import read_text, where_missing

# A repo-relative `.py` path of safe segments: each starts with a word character (so no '.',
# '..' or hidden segment), no shell or Markdown characters, no absolute path. The layout is
# not assumed (`tests/`, `test/registered/`, `bench_*.py`): whether the path is a test file
# is the checkout's discovery configuration's to say, after this check.
TEST_PATH_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)*\.py")
MAX_TEST_PATH = 255


@dataclass(frozen=True)
class Choice:
    """Why a file of several runnable registrations runs this one: `by` the key that chose
    (`file_run.prefer`), its backends in order, and the registrations it chose among."""

    by: str
    prefer: tuple[str, ...]
    among: tuple[str, ...]  # "backend suite (line N)" of each runnable registration

    def as_dict(self) -> dict[str, object]:
        return {"by": self.by, "prefer": list(self.prefer), "among": list(self.among)}


@dataclass(frozen=True)
class FilePlan:
    file: str
    hw: str
    suite: str
    runs_on: tuple[str, ...]
    container_image: str | None
    timeout_seconds: int
    container_options: str = ""
    # Set when the configuration chose among several registrations (none was named).
    choice: Choice | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "file": self.file, "hw": self.hw, "suite": self.suite, "runs_on": list(self.runs_on),
            "container_image": self.container_image, "container_options": self.container_options,
            "timeout_seconds": self.timeout_seconds}
        if self.choice is not None:
            out["choice"] = self.choice.as_dict()
        return out


@dataclass(frozen=True)
class _OneFile:
    """One test file as `gates.requirements` reads a snapshot."""

    config: Config
    files: tuple[str, ...]
    gates: tuple[GateDeclaration, ...]
    registrations: tuple[Registration, ...]

    def registrations_for(self, file: str) -> Sequence[Registration]:
        return [r for r in self.registrations if r.file == file]


def check_test_path(path: str) -> str:
    if len(path) > MAX_TEST_PATH or not TEST_PATH_RE.fullmatch(path):
        raise InputError(f"{path!r} is not a repo-relative test file path DIR/.../NAME.py "
                          "(segments of letters, digits, '_', '.', '-', each starting with a letter, digit "
                          f"or '_'; at most {MAX_TEST_PATH} characters)")
    return path


def check_image_tag(tag: str) -> str:
    if not IMAGE_TAG_RE.fullmatch(tag):
        raise InputError(f"{tag!r} is not a valid image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})")
    return tag


def _described(reg: Registration) -> str:
    return f"{reg.backend} {reg.suite} (line {reg.line})"


def _choices(regs: Sequence[Registration]) -> str:
    return ", ".join(map(_described, regs))


def _preferred(prefer: Sequence[str], regs: Sequence[Registration]) -> Registration | None:
    """The one registration of the first backend of `prefer` that `regs` have, or None (none
    listed, or that backend registers the file on several stages: the command names one)."""
    for backend in prefer:
        of_backend = [r for r in regs if r.backend == backend]
        if of_backend:
            return of_backend[0] if len(of_backend) == 1 else None
    return None


def _several_hint(file: str, runnable: Sequence[Registration], backend_given: bool,
                  prefer: Sequence[str], config: Config) -> str:
    """How to name one of several runnable registrations: a stage; a backend only where it names
    one registration (two NPU registrations are told apart by their stage alone); and, when
    nothing was named and their backends differ, the configuration's `file_run.prefer`."""
    keys = [config.key_of(r.backend, r.suite) for r in runnable]
    hint = (f"/rerun-test {file} STAGE, with STAGE one of: {', '.join(keys)}")
    backends = [r.backend for r in runnable]
    unique = [b for b in dict.fromkeys(backends) if backends.count(b) == 1]
    if unique and not backend_given:
        hint += f" (or the backend: {', '.join(unique)})"
    distinct = list(dict.fromkeys(backends))
    if not backend_given and len(distinct) > 1 and not any(b in prefer for b in distinct):
        if prefer:
            hint += f"; or add one of {', '.join(distinct)} to file_run.prefer"
        else:
            hint += f"; or choose by backend for every file: file_run.prefer: [{', '.join(distinct)}]"
    return hint


def _missing_hint(root: Path, file: str) -> str:
    """What to give instead of a path that does not exist: never to create it (a rerun runs
    the checkout's files), but the close name beside it, or where the path stops existing."""
    directory, name, names = where_missing(root, file)
    rest = "Paths are relative to the checkout's root (--repo DIR)."
    at = "/".join(filter(None, (directory, name)))
    if at != file:  # a directory on the way is missing
        if name in names:
            return f"{at} is a file, not a directory. {rest}"
        close = _close(name, [n for n in names if not n.endswith(".py")], 0.6)
        guess = f"; did you mean {'/'.join(filter(None, (directory, close)))}/...?" if close else "."
        return f"{directory or 'the checkout root'} has no directory {name}{guess} {rest}"
    close = _close(name, [n for n in names if n.endswith(".py")], 0.85)
    if close is not None:
        return f"did you mean {'/'.join(filter(None, (directory, close)))}? {rest}"
    return f"{directory or 'the checkout root'} has no file {name}. {rest}"


def _close(word: str, names: Sequence[str], cutoff: float) -> str | None:
    # A file's cutoff is stricter than a misspelt key's (0.6): test file names share `test_` and `.py`.
    found = difflib.get_close_matches(word, names, n=1, cutoff=cutoff)
    return found[0] if found else None


def _external(config: Config, reg: Registration) -> bool:
    stage = config.stage_of(reg.backend, reg.suite)
    return stage is not None and stage.external


def _variant(stage: Stage, name: str | None, file: str) -> Stage:
    """The variant `name` of `stage` a rerun runs on (its first when none is named), or the stage."""
    planned = stage.planned()
    if name is None and not stage.variants:
        return stage
    found = planned[0] if name is None else next((p for p in planned if p.variant and p.variant.name == name), None)
    if found is None:
        keys = [p.key for p in planned]
        raise InputError(f"stage {stage.key} has no variant {name!r}" + (f" (its variants: {', '.join(keys)})"
                         if stage.variants else " (it has no variants)"), path=file,
                         hint=f"name one of: {', '.join(keys)}")
    return found


MISSING = "CP402"  # the code `read_text` gives a path that does not exist

# Diagnostics of the file's scan that are not reasons to refuse it here: a suppression
# written wrongly (lint reports it), and "no registration", which is refused below in words of its own.
_NOT_REFUSED = frozenset({"CP231", "CP250", "CP251"})


def resolve_file(file: str, source_root: Path, *, config_path: str | Path | None = None,
                 image_tag: str | None = None, backend: str | None = None,
                 stage: str | None = None, cache: ScanCache | None = None) -> FilePlan:
    check_test_path(file)
    root = Path(source_root)
    if not root.is_dir():
        raise UsageError(f"checkout {source_root} is not a directory", source="--repo",
                         hint="pass --repo with the root of the checkout")
    config: Config = load_config(root, config_path)
    tag = check_image_tag(image_tag) if image_tag else config.file_run.default_tag
    labels, _missing = optional_labels(root, config)  # as the plan reads it: labels.py only when used
    try:
        text = read_text(root, file, what="test file")  # refuses symlinks on every component
    except InputError as exc:
        if exc.code != MISSING:
            raise
        raise InputError(exc.message, path=file, code=exc.code, hint=_missing_hint(root, file)) from None
    if not config.discovery.is_test_file(file):
        pattern = config.discovery.pattern
        shown = ", ".join(map(repr, pattern)) if isinstance(pattern, tuple) else repr(pattern)
        raise InputError(f"{file} is not a discovered test file (roots: {', '.join(config.discovery.roots)}; "
                          f"pattern {shown})", path=file)
    # One parse for the markers, registrations, gates and suppressions (a gate declaration
    # that cannot be read is an error of the file); `cache`: the scan cache, by the text's SHA-256.
    scanned = scan_text(text, file, config, labels, cache)
    regs = list(scanned.registrations)
    gates = scanned.gates
    if config.estimates_file:
        # The estimates file travels with the tests it times (the checkout's own).
        table = parse_estimates(read_text(root, config.estimates_file, what="estimates file"),
                                config.estimates_file)
        regs, _unused = apply_estimates(regs, table)
    refused = [d for d in scanned.errors if d.code not in _NOT_REFUSED]
    if refused:
        raise InputErrors(refused)
    # A required gate the file lacks makes it invalid for the plan, so it is refused here too,
    # with the same diagnostic (CP520) and the same suppressions.
    view = _OneFile(config=config, files=(file,), gates=gates, registrations=tuple(regs))
    missing = apply_suppressions(violations(view), scanned.suppressions, config.lint.ignore).kept
    if missing:
        raise InputErrors(missing)
    if not regs:
        raise InputError(f"{file} is not registered for any stage", path=file,
                          hint=f"add {'/'.join(sorted(config.markers.names))}(...) at module level")
    enabled = [r for r in regs if r.disabled is None]
    if not enabled:
        raise InputError(f"{file} is disabled: {regs[0].disabled}", path=file, line=regs[0].line,
                          hint="re-enable the registration to rerun it")
    # A stage is named by its name (every backend's, when several share it) or its key, and
    # a variant of it by `KEY+VARIANT`.
    variant = None
    if stage is not None and "+" in stage:
        stage, _plus, variant = stage.partition("+")
    chosen = [r for r in enabled if backend in (None, r.backend)
              and stage in (None, r.suite, config.key_of(r.backend, r.suite))]
    if not chosen:
        asked = " ".join(f"{what} {name}" for what, name in (("backend", backend), ("stage", stage)) if name)
        keys = sorted({config.key_of(r.backend, r.suite) for r in enabled})
        raise InputError(f"{file} has no enabled registration for {asked}; its registrations: "
                          f"{_choices(enabled)}", path=file, line=enabled[0].line,
                          hint=f"name one of: {', '.join(keys)}")
    runnable = [r for r in chosen if not _external(config, r)]
    if not runnable:
        reg = chosen[0]
        raise InputError(f"{file} is registered to {reg.suite}, an external stage that ci-policy "
                          "does not run", path=file, line=reg.line)
    choice: Choice | None = None
    if len(runnable) > 1 and backend is None and stage is None:
        # Several stages could run it (a CUDA and a ROCm registration): the configuration's
        # order of backends chooses, as upstream's rerun takes the CUDA one.
        preferred = _preferred(config.file_run.prefer, runnable)
        if preferred is not None:
            choice = Choice(by="file_run.prefer", prefer=config.file_run.prefer,
                            among=tuple(map(_described, runnable)))
            runnable = [preferred]
    if len(runnable) > 1:
        # Still several: the command names one.
        named = "stage" if backend is not None else "backend or stage"
        raise InputError(f"{file} has {len(runnable)} registrations that can run ({_choices(runnable)}); "
                          f"name the {named} to rerun", path=file, line=runnable[1].line,
                          hint=_several_hint(file, runnable, backend is not None, config.file_run.prefer, config))
    reg = runnable[0]
    configured = config.stage_of(reg.backend, reg.suite)
    assert configured is not None  # registrations_of validated the suite
    stage_config = _variant(configured, variant, file)
    # round() first: 0.1 * 30 is 3.0000000000000004 in binary floating point, not 3.
    timeout = max(config.file_run.min_timeout,
                  math.ceil(round(config.file_run.timeout_factor * reg.est_time, 6)))
    if stage_config.timeout_per_file is not None:
        # Capped by the stage's own limit: a rerun never gets longer than a pipeline run.
        timeout = min(timeout, stage_config.timeout_per_file)
    repo = config.file_run.image_for(reg.backend)
    # CPU stages usually name no runner labels; a hosted runner runs them.
    runs_on = stage_config.runs_on or (DEFAULT_CPU_RUNNER,)
    image = stage_config.image or (f"{repo}:{tag}" if repo else None)
    return FilePlan(file=file, hw=reg.backend, suite=reg.suite, runs_on=runs_on,
                    container_image=image, timeout_seconds=int(math.ceil(timeout)),
                    container_options=config.backends.container_options_for(reg.backend), choice=choice)
