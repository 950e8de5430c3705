"""GitHub's own Actions code in the tests: `@actions/expressions` and `@actions/workflow-parser`.

The workflow tests evaluate expressions and load workflows with the code behind GitHub's Actions
language service (npm, pinned by tests/github_js/package-lock.json; scripts/test.sh installs it
with `npm ci`), not with a model of it written here. One node process (tests/github_js/bridge.mjs)
answers JSON lines for the whole pytest session.

- In: `interpolate(value, context)`: a workflow value (string, number, list, mapping, as read
  from YAML) with its `${{ }}` evaluated as the template reader does it (a lone expression keeps
  its type; text around expressions is its `format()` call). `interpolate_strings(mapping,
  context)`: `env`, `with`, `secrets` or a job's `outputs`, whose values GitHub makes strings.
- In: `condition(if_, context, status)`: a job's or step's `if:` (None, a bool or text, `${{ }}`
  optional) as GitHub's parser makes it a condition (`success() && (...)` unless a status
  function is named) -> bool; `condition_expression(if_, context_names)` shows that expression.
  `evaluate(expression, context, status)`: a bare expression.
- `context` maps context names (github, inputs, needs, matrix, steps, secrets, vars, env, job,
  strategy, runner) to their JSON values: only those may be named. `status` says what the status
  functions answer where the `if:` stands: `Status.job(results of every job it needs, directly or
  not, cancelled)` for a job's `if:`, `Status.step(failed, cancelled)` for a step's (the runner's
  one job status). Without a status, as outside `if:` on GitHub, they do not exist.
- In: `parse_errors(path)`: a workflow or action file (`action.yml`/`action.yaml`) loaded by
  `@actions/workflow-parser` (schema, expressions, contexts allowed where they are used, jobs,
  needs, matrices) -> its errors, each "FILE (Line: L, Col: C): message"; [] when GitHub would load it.
  `parse_text_errors(content, name, kind)`: the same for text (a workflow a command writes).
- In: `contexts(definition)`: the contexts GitHub's workflow schema allows in one of its
  definitions ("job-if", "strategy", "runs-on", "job-env", "step-if", "step-env", "step-with",
  "string-runner-context" for job outputs, ...); `only(context, definition)` keeps just those.
- In: `coerce(value, other)`: the engine's own string conversion, truthiness and loose equality
  of JSON values.
- Out: JSON values (numbers as int or float; NaN and infinities as float).
- Refused, as `ExpressionError` with the engine's own message: a context the caller did not give
  ("Unrecognized named-value"), a status function outside `if:`, a malformed or unterminated
  expression, a function failing (fromJSON of non-JSON, format's bad placeholder), an insert
  directive, a list or mapping where GitHub wants a string; status functions given job names as
  arguments (not modelled).
- Refused, as `GitHubJsMissing`: node or the npm packages not installed (run scripts/test.sh, or
  `npm ci --prefix tests/github_js`), with that fix in the message; the node process ending, with
  its exit status and what it wrote to stderr. The tests fail, never skip.

Driving an event through a workflow's jobs with this engine: tests/workflow_eval.py
(`call_event`, `simulate`).
"""

from __future__ import annotations

import atexit
import json
import math
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from node_process import NodeProcess

HERE = Path(__file__).resolve().parent / "github_js"
BRIDGE = HERE / "bridge.mjs"
PACKAGES = ("@actions/expressions", "@actions/workflow-parser")


class ExpressionError(Exception):
    """GitHub's engine refused an expression or a value, or failed evaluating it."""


class GitHubJsMissing(RuntimeError):
    """node or the pinned npm packages are not installed, or the node process ended."""


@dataclass(frozen=True)
class Status:
    """What the status functions answer where an `if:` is evaluated."""

    success: bool = True
    failure: bool = False
    cancelled: bool = False

    @classmethod
    def job(cls, needed: Sequence[str], cancelled: bool = False) -> Status:
        """A job's `if:`: `needed` are the results of every job it needs, directly or not ("if
        you have a chain of dependent jobs, failure() returns true if any ancestor job fails",
        Expressions; a skipped ancestor makes success() false, so its dependants skip too)."""
        return cls(success=all(r == "success" for r in needed), failure="failure" in needed, cancelled=cancelled)

    @classmethod
    def step(cls, failed: bool, cancelled: bool = False) -> Status:
        """A step's `if:`: `failed` when an earlier step of the job failed (not continue-on-error).
        The runner answers the three from the one job status (success, failure or cancelled;
        a cancelled run's job is cancelled), so exactly one of them is true."""
        return cls(success=not failed and not cancelled, failure=failed and not cancelled, cancelled=cancelled)


def _encode(value: Any) -> Any:
    """JSON has no NaN or infinity; the bridge reads {"$number": "NaN"} as that number."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"$number": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    if isinstance(value, Mapping):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(obj: dict) -> Any:
    if set(obj) == {"$number"}:
        return float(obj["$number"])
    return obj


def _dumps(value: Any) -> str:
    return json.dumps(_encode(value), allow_nan=False)


class _Bridge:
    """The node process, started on first use and ended when Python exits."""

    def __init__(self) -> None:
        self._node = NodeProcess(self._start, GitHubJsMissing, "the node bridge", wait=10)

    def _start(self, stderr: IO[str]) -> subprocess.Popen[str]:
        node = shutil.which("node")
        if node is None:
            raise GitHubJsMissing("node is not installed: the workflow tests run GitHub's own expression engine "
                                  "and workflow parser on node (>= 20); install Debian's nodejs and npm")
        missing = [p for p in PACKAGES if not (HERE / "node_modules" / p / "package.json").is_file()]
        if missing:
            raise GitHubJsMissing(f"{', '.join(missing)} not installed in tests/github_js/node_modules: "
                                  "run scripts/test.sh, or `npm ci --prefix tests/github_js`")
        proc = subprocess.Popen([node, str(BRIDGE)], cwd=HERE, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=stderr, text=True, encoding="utf-8", bufsize=1)
        atexit.register(self._node.close)
        return proc

    def ask(self, request: dict) -> Any:
        line = self._node.exchange(json.dumps(request, allow_nan=False))
        answer = json.loads(line, object_hook=_decode)
        if not answer["ok"]:
            raise ExpressionError(answer["error"])
        return answer["value"]


_BRIDGE = _Bridge()


def _status(status: Status | None) -> dict | None:
    if status is None:
        return None
    return {"success": status.success, "failure": status.failure, "cancelled": status.cancelled}


def evaluate(expression: str, context: Mapping[str, Any], status: Status | None = Status()) -> Any:
    """The value of a bare expression (the text inside `${{ }}`); status functions only with a status."""
    return _BRIDGE.ask({"op": "evaluate", "expression": expression, "context": _dumps(context),
                        "status": _status(status)})


def interpolate(value: Any, context: Mapping[str, Any]) -> Any:
    """A workflow value with its `${{ }}` evaluated, item by item in lists and mappings."""
    return _BRIDGE.ask({"op": "interpolate", "value": _encode(value), "context": _dumps(context)})


def interpolate_strings(mapping: Mapping[str, Any], context: Mapping[str, Any]) -> dict[str, str]:
    """A mapping of string fields (`env`, `with`, a job's `outputs`) evaluated: each value its
    string (`true`, `3`, '' for null), as GitHub makes one; a list or mapping value is refused."""
    return dict(_BRIDGE.ask({"op": "interpolate", "value": _encode(mapping), "context": _dumps(context),
                             "strings": True}))


def condition(if_: Any, context: Mapping[str, Any], status: Status) -> bool:
    """A job's or step's `if:` (None when absent)."""
    answer = _BRIDGE.ask({"op": "condition", "if": if_, "context": _dumps(context), "status": _status(status)})
    return bool(answer["value"])


def condition_expression(if_: Any, context_names: Sequence[str]) -> str:
    """The expression GitHub evaluates for an `if:` (with its implicit `success() && (...)`)."""
    answer = _BRIDGE.ask({"op": "condition", "if": if_, "context": _dumps(dict.fromkeys(context_names)),
                          "status": _status(Status())})
    return str(answer["expression"])


@dataclass(frozen=True)
class Coerced:
    string: str
    truthy: bool
    equals: bool


def coerce(value: Any, other: Any = None) -> Coerced:
    """The engine's string conversion and truthiness of `value`, and whether `value == other`."""
    answer = _BRIDGE.ask({"op": "coerce", "value": _dumps(value), "other": _dumps(other)})
    return Coerced(answer["string"], answer["truthy"], answer["equals"])


def to_string(value: Any) -> str:
    return coerce(value).string


def truthy(value: Any) -> bool:
    return coerce(value).truthy


def loose_equal(a: Any, b: Any) -> bool:
    return coerce(a, b).equals


_CONTEXTS: dict[str, list[str]] = {}


def contexts(definition: str) -> list[str]:
    """The contexts GitHub's workflow schema allows in `definition` ("job-if", "step-env", ...)."""
    if definition not in _CONTEXTS:
        _CONTEXTS[definition] = list(_BRIDGE.ask({"op": "contexts", "definition": definition}))
    return _CONTEXTS[definition]


def only(context: Mapping[str, Any], definition: str) -> dict[str, Any]:
    """`context` less what GitHub's workflow schema does not allow in `definition`."""
    allowed = contexts(definition)
    return {name: value for name, value in context.items() if name in allowed}


def parse_errors(path: Path, name: str | None = None) -> list[str]:
    """`@actions/workflow-parser`'s errors for a workflow or action file; `name` labels them."""
    kind = "action" if path.name in ("action.yml", "action.yaml") else "workflow"
    return parse_text_errors(path.read_text(encoding="utf-8"), name or str(path), kind)


def parse_text_errors(content: str, name: str, kind: str = "workflow") -> list[str]:
    """The same for a workflow (`kind` "workflow") or action ("action") held as text, e.g. one a
    command writes."""
    return list(_BRIDGE.ask({"op": "parse", "name": name, "content": content, "kind": kind}))
