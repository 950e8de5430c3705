"""Errors and diagnostics: problems are values, exceptions are control flow.

- In: the facts of a problem: message, path, line, column, code, hint.
- Out: `Diagnostic` values, the exceptions below and `CODES`.
- Refused: nothing: these are the values and exceptions the readers refuse with.
- `Diagnostic`: the one type for "a located problem in an input": a frozen value with
  a severity ("error" or "warning"), a stable `code` from `CODES`, path/line/col, a
  message and a hint. `lint` collects them; a warning is only ever a `Diagnostic`.
- `CODES`: code -> (short name, one-line example message). One code per kind of
  problem, not per message; a code never changes meaning once published:
  CP1xx configuration, CP2xx markers and registrations, CP3xx the label registry,
  CP4xx discovery and checkout reads (and the estimates file), CP5xx gates, CP6xx the
  GitHub Actions workflows, CP7xx the test history and its report, CP9xx warnings.
- `CiPolicyError`: the base of every exception ci_policy raises. Each subclass carries
  the exit code the command line gives it:
  - `InputError` (1): raised to stop at one bad input; carries one `Diagnostic`.
  - `InputErrors` (1): raised to stop at several; carries their `Diagnostic`s.
  - `UsageError` (2, always): the command line or the environment it reads is wrong;
    names the option (`--event`) or variable (`$GITHUB_RUN_ATTEMPT`) at fault.
  - `StoreUnavailable` (1): the metric-history store cannot be reached or used.
- Rendering to text, JSON or `::error` annotations happens in `ci_policy.render`, and the
  mapping to exit codes in `ci_policy.cli.main`, each once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]

# code -> (name, one-line example). The docs site's diagnostics index (generated,
# docs/reference/diagnostics/index.md) lists the same rows (a test compares them) and
# tests/model/test_diagnostics.py triggers every one.
CODES: dict[str, tuple[str, str]] = {
    # -- CP100-CP199: configuration (ci_policy.config names them in config/codes.py) -------------
    "CP100": ("config-unreadable", "configuration file ../ci-policy.yml cannot be read: No such file or directory"),
    "CP101": ("config-invalid-yaml", "invalid YAML: anchors are not allowed in ci-policy configuration"),
    "CP102": ("config-unknown-key", "stages[0].partiton: unknown key; did you mean 'partitions'?"),
    "CP103": ("config-missing-key", "stages[0].runs_on: required for cuda stages that are not external"),
    "CP104": ("config-wrong-type", "stages[0].partitions: expected an integer, got a string ('2')"),
    "CP105": ("config-invalid-value", "stages[0].backend: expected one of cpu, cuda, rocm, got 'gpu'"),
    "CP106": ("config-duplicate", "stages[2].name: duplicate stage name 'a' (also stages[0])"),
    "CP107": ("config-unsupported", "version: unsupported version 2; this ci_policy reads version 1"),
    "CP108": ("config-inconsistent", "gates.min_samples: must not exceed gates.window (5), got 7"),
    "CP109": ("config-after-unknown", "stages[2].after[0]: names no stage: 'gpu-c'; did you mean 'gpu-a'?"),
    "CP110": ("config-after-cycle", "stages[1].after[0]: the stages wait for each other in a cycle: "
              "gpu-a -> gpu-b -> gpu-a"),
    "CP111": ("config-github-limit", "stages[4].after: puts stage 'gpu-e' in wave 4; the pipeline runs at most "
              "4 waves (waves 0 to 3), one job each, fixed before the run starts"),
    # -- CP200-CP299: markers and registrations --------------------------------------------------
    "CP201": ("marker-not-module-level",
              "register_cuda_ci(...) here is not a registration: markers are read only as "
              "module-level expression statements (...)"),
    "CP202": ("marker-not-called",
              "register_cuda_ci is referenced without being called as a module-level statement, "
              "so ci-policy cannot read it"),
    "CP203": ("marker-attribute-call",
              "ci.register_cuda_ci is not a registration: ci-policy reads only calls to the bare name "
              "register_cuda_ci"),
    "CP204": ("marker-import-alias",
              "register_cuda_ci is imported as 'reg'; ci-policy reads only calls to the bare name "
              "register_cuda_ci"),
    "CP205": ("marker-imported-unused",
              "register_cuda_ci is imported but this file has no module-level register_cuda_ci(...) "
              "statement, so ci-policy reads no registration from it"),
    "CP206": ("python-syntax-error", "tests/e2e/test_a.py is not valid Python: invalid syntax"),
    "CP207": ("marker-undeclared",
              "register_amd_ci(...) looks like a registration marker but the configuration does not declare it "
              "(configured: register_cpu_ci, register_cuda_ci, register_rocm_ci), so ci-policy reads no "
              "registration from it"),
    "CP210": ("marker-unpacked-arguments", "register_cuda_ci: *args is not allowed; write every argument literally"),
    "CP211": ("marker-positional-arguments",
              "register_cuda_ci takes at most 2 positional arguments (est_time, suite), got 3"),
    "CP212": ("marker-unknown-argument", "register_cuda_ci: unknown argument 'label'; did you mean 'labels'?"),
    "CP213": ("marker-argument-twice",
              "register_cuda_ci: argument 'suite' is given twice (positionally and by keyword)"),
    "CP214": ("marker-missing-argument", "register_cuda_ci: missing required argument 'suite'"),
    "CP215": ("marker-argument-not-literal",
              "register_cuda_ci: est_time must be a literal, not `60 * 30` (ci-policy reads it from source "
              "without running the file)"),
    "CP216": ("marker-extra-argument-invalid", "register_cuda_ci: runner_config must be a string, got 1"),
    "CP217": ("suite-template-incomplete",
              "register_cuda_ci: no suite, and the suite template '{stage}-test-{runner_config}' also needs "
              "runner_config"),
    "CP218": ("suite-template-mismatch",
              "register_cuda_ci: suite 'base-b-test-small' differs from 'base-b-test-1-gpu-large', the suite the "
              "template '{stage}-test-{runner_config}' builds from stage and runner_config"),
    "CP219": ("marker-argument-surrogate",
              "register_cuda_ci: disabled holds a lone surrogate escape (\\ud800 to \\udfff), which no output "
              "can carry"),
    "CP220": ("registration-duplicate",
              "register_cuda_ci: tests/e2e/test_a.py is registered twice for suite 'gpu-a' (lines 3 and 4), "
              "so it would run twice"),
    "CP221": ("registration-gpu-in-cpu-only-root",
              "register_cuda_ci: tests/unit/test_a.py is under tests/unit, a cpu_only implicit root; "
              "cuda tests cannot live there"),
    "CP222": ("registration-no-main-block",
              "stage cpu runs tests/test_a.py as `python FILE`, but the file has no "
              "`if __name__ == \"__main__\":` block that calls something, so it would exit 0 without "
              "running a test"),
    "CP223": ("est-time-invalid",
              "register_cuda_ci: est_time must be a finite non-negative number of seconds, got -1"),
    "CP224": ("suite-not-a-string", "register_cuda_ci: suite must be a string, got 3"),
    "CP225": ("suite-unknown", "register_cuda_ci: suite 'gpu-c' is not a configured cuda stage; did you mean 'gpu-a'?"),
    "CP226": ("labels-invalid", "register_cuda_ci: labels must be a list of string literals or None, got 'megatron'"),
    "CP227": ("label-unknown",
              "register_cuda_ci: unknown label 'megatrn' (did you mean 'megatron'?); valid labels: megatron"),
    "CP228": ("labels-required",
              "register_cuda_ci: a cuda registration needs at least one label (gpu_requires_labels is true), "
              "so that a PR can select it"),
    "CP229": ("nightly-invalid", "register_cuda_ci: nightly must be True or False, got 'yes'"),
    "CP230": ("disabled-invalid", "register_cuda_ci: disabled must give a reason, got ''"),
    "CP231": ("test-file-unregistered",
              "tests/e2e/test_a.py matches the discovery pattern 'test_*.py' but has no registration and is "
              "not under an implicit root, so no stage would run it"),
    "CP232": ("quarantine-file-unknown",
              "quarantine[0].file: tests/e2e/test_gone.py is not a registered test file"),
    "CP233": ("quarantine-expired",
              "quarantine[0].until: the quarantine of tests/e2e/test_a.py has expired: it held until 2026-01-15 "
              "(flaky NCCL init; owner @alice), and its failures fail the run again"),
    "CP250": ("suppression-without-codes",
              "a bare `# ci-policy: ignore` would hide every diagnostic of the line; name what it accepts"),
    "CP251": ("suppression-unknown-code",
              "`# ci-policy: ignore[...]` names 'CP299', not a diagnostic code or name of ci-policy lint"),
    # -- CP300-CP399: the label registry ---------------------------------------------------------
    "CP301": ("labels-syntax-error", "labels file labels.py is not valid Python: invalid syntax"),
    "CP302": ("labels-undefined", "labels file labels.py does not define KNOWN_LABELS"),
    "CP303": ("labels-assigned-twice",
              "KNOWN_LABELS is assigned 2 times (lines 1, 2); it must be assigned exactly once"),
    "CP304": ("labels-not-plain-assignment",
              "KNOWN_LABELS must be a plain module-level assignment `KNOWN_LABELS = {...}`"),
    "CP305": ("labels-not-a-dict", "KNOWN_LABELS must be a dict literal of label name -> description string"),
    "CP306": ("label-entry-not-literal", "KNOWN_LABELS key is not a string literal"),
    "CP307": ("label-duplicate", "KNOWN_LABELS: duplicate label 'fsdp' (first on line 2)"),
    "CP308": ("label-name-invalid",
              "KNOWN_LABELS: 'a b' is not a valid label name (expected [A-Za-z0-9][A-Za-z0-9_.-]*)"),
    "CP310": ("config-label-unknown", "cadences.nightly_exclude: unknown label 'gone'; valid labels: megatron"),
    "CP311": ("scope-shadows-label",
              "scopes.run-ci-fsdp: run-ci-fsdp is both a broad scope and the PR label of the known label 'fsdp'"),
    # -- CP400-CP499: discovery and checkout reads -----------------------------------------------
    "CP401": ("symlink-refused",
              "test file tests/e2e/test_a.py is a symlink; ci-policy refuses symlinks in a checkout"),
    "CP402": ("path-missing", "labels file labels.py does not exist"),
    "CP403": ("path-wrong-type", "discovery root tests is not a directory"),
    "CP404": ("path-unreadable", "test file tests/e2e/test_a.py cannot be read: Permission denied"),
    "CP405": ("file-too-large", "test file tests/e2e/test_a.py is larger than 2097152 bytes"),
    "CP406": ("not-utf8", "test file tests/e2e/test_a.py is not valid UTF-8"),
    "CP407": ("path-control-characters",
              "test file 'tests/e2e/test_\\n.py' has control characters in its path; ci-policy refuses such names"),
    "CP408": ("too-deeply-nested", "tests/e2e/test_a.py is too deeply nested for the Python parser"),
    "CP420": ("estimates-invalid-json",
              "estimates file ci/estimates.json is not valid strict JSON: duplicate key 'schema'"),
    "CP421": ("estimates-wrong-shape",
              'estimates file ci/estimates.json must be {"schema": 1, "estimates": [...]}'),
    "CP422": ("estimates-entry-invalid", "estimates[0].est_time must be a finite number >= 0, got -1"),
    "CP423": ("estimates-entry-duplicate", "estimates[1]: tests/e2e/test_a.py / gpu-a is listed twice"),
    # -- CP500-CP599: gates ----------------------------------------------------------------------
    "CP501": ("gate-metric-key-invalid", "register_ci_gate: metric_key must be a non-empty string, got ''"),
    "CP502": ("gate-steps-invalid",
              "register_ci_gate: steps must be \"last\", \"all\" or a list of step indices, got 'some'"),
    "CP503": ("gate-constraint-invalid",
              "register_ci_gate: constraint has unknown key(s) 'rel'; accepted: rel_up, abs_floor_up, rel_down, "
              "abs_floor_down"),
    "CP504": ("gate-enforce-invalid", "register_ci_gate: enforce must be True or False, got 1"),
    "CP505": ("gate-allowlist-reason-invalid", "register_ci_gate: allowlist_reason must be a string or None, got 1"),
    "CP510": ("gate-metric-not-captured",
              "register_ci_gate: metric_key 'train/x' is not captured, so it can never be evaluated"),
    "CP511": ("gate-no-default",
              "register_ci_gate: steps not given and gates.defaults has none for 'train/x'"),
    "CP520": ("gate-required-missing",
              "tests/e2e/session_server/test_s.py lacks the gate required for session server v1 by "
              "gates.require[0]: register_ci_gate(metric_key='rollout/...')"),
    # -- CP900-CP999: warnings -------------------------------------------------------------------
    # -- CP600-CP699: the GitHub Actions workflows, read as data (model/workflows.py) ------------
    "CP601": ("workflow-invalid-yaml", "workflow .github/workflows/ci.yml is not valid YAML: mapping values are "
                                       "not allowed here"),
    "CP602": ("reusable-ref-not-sha",
              "jobs.ci.uses: pr-pipeline.yml is called at 'main', not a full commit SHA"),
    "CP603": ("reusable-ref-mismatch",
              "jobs.ci.with.ci-policy-ref: '2222222222222222222222222222222222222222' differs from the ref "
              "pr-pipeline.yml is called at ('1111111111111111111111111111111111111111')"),
    "CP604": ("reusable-input-unknown",
              "jobs.ci.with.cadance: pr-pipeline.yml has no input 'cadance' (inputs: ci-policy-ref, "
              "ci-policy-repository, pull-request, cadence, python, concurrency-group)"),
    "CP605": ("pipeline-secret-missing",
              "jobs.ci.secrets.metrics-store-read-url: missing; the checkout declares metric gates and gates read "
              "their baselines from it"),
    "CP606": ("stage-job-missing",
              "stage gpu-b has no job running `ci-policy run --stage gpu-b` in .github/workflows/ci.yml"),
    "CP607": ("stage-job-unknown",
              "jobs.gpu-c: `ci-policy run --stage gpu-c` names no configured stage (configured: cpu, gpu-a, gpu-b)"),
    "CP608": ("stage-runs-on-mismatch",
              "jobs.gpu-a.runs-on: [self-hosted, h100] does not match stage gpu-a's runs_on [h200]"),
    "CP609": ("reusable-input-missing", "jobs.tune.with.workflow: missing; tune.yml requires it"),
    "CP610": ("caller-grant-missing",
              "jobs.ci.permissions: pr-pipeline.yml's job plan requests statuses: read, but the job grants "
              "statuses: none; GitHub refuses to start the run (a called workflow's jobs can only reduce the caller "
              "job's permissions, never elevate them)"),
    # -- CP700-CP799: the test history and its report (raised by `history` and `report`) -------------
    "CP701": ("history-schema-old", "the store holds schema version 2, older than the test history (version 3); "
              "a read never migrates a store"),
    "CP702": ("since-invalid", "'30' is not a time span: write a number of days or weeks, e.g. 30d or 4w"),
    "CP901": ("stage-without-tests", "stage gpu-b has no registered test files"),
    "CP902": ("label-unused", "label 'long' is not used by any test"),
    "CP903": ("estimates-file-missing",
              "estimates file ci/estimates.json does not exist yet; the est_time literals apply"),
    "CP904": ("estimate-unused",
              "the estimates file lists tests/e2e/test_gone.py for suite gpu-a, which no registration matches"),
    "CP906": ("suppression-unused", "`# ci-policy: ignore[CP201]` suppresses nothing here"),
    "CP905": ("registration-disabled", "register_cuda_ci for suite gpu-a is disabled: flaky on driver 580"),
    "CP907": ("gate-label-near-miss",
              "stages[2].requires_labels: gate label 'run-ci-extar' is one edit from 'run-ci-extra'"),
    "CP908": ("runs-on-placeholder",
              "runs_on of 2 stages is still the placeholder 'TODO-runner': gpu-b, amd"),
    "CP909": ("quarantine-expiring",
              "quarantine[0].until: the quarantine of tests/e2e/test_a.py ends on 2026-01-15, in 3 day(s) "
              "(within 7)"),
}



def code_name(code: str | None) -> str | None:
    """The short name of a code, or None for a diagnostic without one."""
    entry = CODES.get(code) if code is not None else None
    return entry[0] if entry is not None else None


@dataclass(frozen=True)
class Diagnostic:
    """One problem in an input, located as precisely as the input allows."""

    message: str
    path: str | None = None
    line: int | None = None
    col: int | None = None
    hint: str | None = None
    code: str | None = None
    severity: Severity = "error"

    @property
    def name(self) -> str | None:
        return code_name(self.code)

    def location(self) -> str:
        """`path:line:col` as far as known; "" for a problem that no file locates (a remote answer)."""
        if self.path is None and self.line is None:
            return ""
        parts = [self.path or "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.col is not None:
                parts.append(str(self.col))
        return ":".join(parts)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path or "", self.line or 0, self.col or 0, self.message)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: code and name (when coded), path, line, col, message, hint.

        Severity is not a field: JSON output lists errors and warnings apart.
        """
        coded = {"code": self.code, "name": self.name} if self.code is not None else {}
        return {**coded, "path": self.path, "line": self.line, "col": self.col, "message": self.message,
                "hint": self.hint}

    def __str__(self) -> str:
        where = self.location()
        text = f"{where}: {self.message}" if where else self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


def warning(message: str, *, path: str | None = None, line: int | None = None, col: int | None = None,
            hint: str | None = None, code: str | None = None) -> Diagnostic:
    """A warning: reported by `lint`, never raised, never fails a run."""
    return Diagnostic(message, path=path, line=line, col=col, hint=hint, code=code, severity="warning")


class CiPolicyError(Exception):
    """The base of every exception ci_policy raises."""

    exit_code = 1


class InputError(CiPolicyError):
    """Raised to stop at a problem in an input (a file of the checkout, a diff, a payload).

    Carries the problem as `diagnostic`; the attributes below read through to it.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        col: int | None = None,
        hint: str | None = None,
        code: str | None = None,
    ) -> None:
        self.diagnostic = Diagnostic(message=message, path=path, line=line, col=col, hint=hint, code=code)
        super().__init__(message)

    @classmethod
    def of(cls, diagnostic: Diagnostic) -> InputError:
        """Stop at a problem already found as a value (an error, never a warning)."""
        return cls(diagnostic.message, path=diagnostic.path, line=diagnostic.line, col=diagnostic.col,
                   hint=diagnostic.hint, code=diagnostic.code)

    @property
    def message(self) -> str:
        return self.diagnostic.message

    @property
    def path(self) -> str | None:
        return self.diagnostic.path

    @property
    def line(self) -> int | None:
        return self.diagnostic.line

    @property
    def col(self) -> int | None:
        return self.diagnostic.col

    @property
    def hint(self) -> str | None:
        return self.diagnostic.hint

    @property
    def code(self) -> str | None:
        return self.diagnostic.code

    def location(self) -> str:
        return self.diagnostic.location()

    def as_dict(self) -> dict[str, Any]:
        return self.diagnostic.as_dict()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InputError) and self.diagnostic == other.diagnostic

    def __hash__(self) -> int:
        return hash(self.diagnostic)

    def __repr__(self) -> str:
        return f"InputError({self.location()}: {self.message!r})"

    def __str__(self) -> str:
        return str(self.diagnostic)


def diagnostic_of(problem: Diagnostic | InputError) -> Diagnostic:
    return problem.diagnostic if isinstance(problem, InputError) else problem


class InputErrors(CiPolicyError):
    """Raised to stop at several input problems found in one pass; `errors` are sorted `Diagnostic`s."""

    def __init__(self, errors: Iterable[Diagnostic | InputError]) -> None:
        self.errors: tuple[Diagnostic, ...] = tuple(
            sorted((diagnostic_of(e) for e in errors), key=Diagnostic.sort_key))
        super().__init__("\n".join(str(e) for e in self.errors))


class UsageError(CiPolicyError):
    """The command line, or the environment a command reads, is wrong: exit 2.

    `source` names what is at fault: an option (`--cadence`) or a variable (`$GITHUB_TOKEN`).
    """

    exit_code = 2

    def __init__(self, message: str, *, source: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.source}: {self.message}" if self.source else self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class StoreUnavailable(CiPolicyError):
    """The metric-history store cannot be reached or used; the message never holds a password."""


def read_failure(exc: OSError | RecursionError | MemoryError) -> Diagnostic:
    """A checkout the core could not even read, as an error instead of a traceback.

    `OSError`: a configured path that runs through a regular file (`README.md/labels.py`).
    `RecursionError`/`MemoryError`: `ast.parse` of a hostile, deeply nested file.
    """
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename is not None else ""
        return Diagnostic(f"cannot read{where}: {exc.strerror or exc}", code="CP404",
                          hint="check the paths named in the configuration")
    return Diagnostic("a file of the checkout is too deeply nested to parse", code="CP408",
                      hint="simplify its deeply nested expressions")
