"""GitHub Actions, evaluated in the tests: expressions, `if:` conditions, `needs`, matrices.

- Expressions: exactly the subset ci-policy's workflows use, as GitHub evaluates it:
  literals (`null`, booleans, numbers, 'strings' with '' escapes), the contexts `needs`,
  `inputs`, `github`, `matrix`, `steps`, `secrets`, `vars`; `!`, `==`, `!=`, `&&`, `||`
  (returning an operand, not a boolean), parentheses, `.name` (names may hold `-`) and
  `['name']`/`[0]` access; the functions `always() success() failure() cancelled()
  contains() startsWith() fromJSON() toJSON() format() join()`. Equality is GitHub's loose
  equality (strings compared ignoring case; other mixed types compared as numbers; arrays
  and objects only by identity) and truthiness GitHub's (`null`, `false`, `0`, `NaN`, `''`
  are false).
- Refused, as `ExpressionError`: any other operator, context or function, a malformed
  expression, an unterminated `${{`: a new construct in a workflow fails its test loudly
  instead of being guessed.
- `simulate()`: a workflow's job graph for one event: `needs` in order, each job's `if`
  (with GitHub's implicit `success() &&` when it names no status function), its matrix
  expanded (a `fromJSON` of an output, `include`, `exclude`), and per matrix entry its
  `name`, `runs-on`, `container`, `timeout-minutes` and steps (`if`, `env`, `with`).
  What the steps would do is given by the test: step outputs, or a hook per step that
  decides its outcome and outputs (e.g. running a bash step, or `ci-policy result`'s rule).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ci_policy.read.shapes import json_type

CONTEXTS = ("needs", "inputs", "github", "matrix", "steps", "secrets", "vars")
STATUS_FUNCTIONS = ("always", "success", "failure", "cancelled")
FUNCTIONS = STATUS_FUNCTIONS + ("contains", "startsWith", "fromJSON", "toJSON", "format", "join")


class ExpressionError(Exception):
    """An expression outside the supported subset, malformed, or failing as it would on GitHub."""


# -- values, as GitHub converts them ---------------------------------------------------------

def kind(value: Any) -> str:
    try:
        return json_type(value)
    except TypeError:
        raise ExpressionError(f"not a value of an expression: {value!r}") from None


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def to_number(value: Any) -> float:
    k = kind(value)
    if k == "null":
        return 0.0
    if k == "boolean":
        return 1.0 if value else 0.0
    if k == "number":
        return float(value)
    if k == "string":
        text = value.strip()
        if text == "":
            return 0.0
        if re.fullmatch(r"0x[0-9a-fA-F]+", text):
            return float(int(text, 16))
        return float(text) if _NUMBER.fullmatch(text) else math.nan
    return math.nan


def truthy(value: Any) -> bool:
    k = kind(value)
    if k == "null":
        return False
    if k == "boolean":
        return bool(value)
    if k == "number":
        return value != 0 and not math.isnan(value)
    if k == "string":
        return value != ""
    return True


def to_string(value: Any) -> str:
    k = kind(value)
    if k == "null":
        return ""
    if k == "boolean":
        return "true" if value else "false"
    if k == "number":
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    if k == "string":
        return value
    return "Array" if k == "array" else "Object"


def loose_equal(a: Any, b: Any) -> bool:
    ka, kb = kind(a), kind(b)
    if ka != kb:
        if {ka, kb} & {"array", "object"}:
            return False
        return to_number(a) == to_number(b)  # NaN equals nothing
    if ka == "string":
        return a.casefold() == b.casefold()
    if ka == "number":
        return float(a) == float(b)
    if ka in ("array", "object"):
        return a is b
    return bool(a == b)


def to_json(value: Any) -> str:
    return json.dumps(value, indent=2)


def from_json(text: Any) -> Any:
    try:
        return json.loads(to_string(text))
    except ValueError as exc:
        raise ExpressionError(f"fromJSON: not JSON: {to_string(text)!r} ({exc})") from None


def format_(fmt: Any, *args: Any) -> str:
    text, out, i = to_string(fmt), [], 0
    while i < len(text):
        c = text[i]
        if text.startswith("{{", i) or text.startswith("}}", i):
            out.append(c)
            i += 2
        elif c == "{":
            m = re.compile(r"\{(\d+)\}").match(text, i)
            if not m or int(m.group(1)) >= len(args):
                raise ExpressionError(f"format: invalid placeholder in {text!r}")
            out.append(to_string(args[int(m.group(1))]))
            i = m.end()
        elif c == "}":
            raise ExpressionError(f"format: unbalanced '}}' in {text!r}")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def contains(search: Any, item: Any) -> bool:
    if kind(search) == "array":
        return any(loose_equal(x, item) for x in search)
    return to_string(item).casefold() in to_string(search).casefold()


def join(value: Any, separator: Any = ",") -> str:
    if kind(value) == "array":
        return to_string(separator).join(to_string(x) for x in value)
    return to_string(value)


def get(container: Any, key: Any) -> Any:
    """`a.b` and `a['b']`/`a[0]`: null when absent; object keys match ignoring case, as on GitHub."""
    if isinstance(container, dict):
        name = to_string(key)
        if name in container:
            return container[name]
        for k, v in container.items():
            if k.casefold() == name.casefold():
                return v
        return None
    if isinstance(container, list) and kind(key) == "number":
        index = to_number(key)
        if index.is_integer() and 0 <= index < len(container):
            return container[int(index)]
    return None


# -- expressions --------------------------------------------------------------------------------

_TOKEN = re.compile(r"""\s*(?:
    (?P<number>0x[0-9a-fA-F]+|-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^']|'')*')
  | (?P<op>==|!=|&&|\|\||<=|>=|[!()\[\].,<>*])
  | (?P<name>[A-Za-z_][A-Za-z0-9_-]*)
)""", re.VERBOSE)

_UNSUPPORTED_OPS = ("<", ">", "<=", ">=", "*")


def tokenize(text: str) -> list[tuple[str, str]]:
    tokens, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if not m or m.end() == i:
            raise ExpressionError(f"cannot read {text[i:]!r} in {text!r}")
        kind_ = m.lastgroup
        assert kind_ is not None
        value = m.group(kind_)
        if kind_ == "op" and value in _UNSUPPORTED_OPS:
            raise ExpressionError(f"operator {value!r} is not supported: {text!r}")
        tokens.append((kind_, value))
        i = m.end()
    return tokens


@dataclass(frozen=True)
class Status:
    """What the status functions answer where the expression is evaluated."""

    success: bool = True
    failure: bool = False
    cancelled: bool = False


class _Parser:
    """Recursive descent over GitHub's precedence: `!` > `==` `!=` > `&&` > `||`."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.pos = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (value is not None and token[1] != value):
            raise ExpressionError(f"expected {value or 'more'} in {self.text!r}")
        self.pos += 1
        return token

    def at(self, *values: str) -> bool:
        token = self.peek()
        return token is not None and token[0] == "op" and token[1] in values

    def parse(self) -> tuple:
        if not self.tokens:
            raise ExpressionError("empty expression")
        node = self.or_()
        if self.peek() is not None:
            raise ExpressionError(f"unexpected {self.peek()[1]!r} in {self.text!r}")  # type: ignore[index]
        return node

    def or_(self) -> tuple:
        node = self.and_()
        while self.at("||"):
            self.take()
            node = ("or", node, self.and_())
        return node

    def and_(self) -> tuple:
        node = self.eq()
        while self.at("&&"):
            self.take()
            node = ("and", node, self.eq())
        return node

    def eq(self) -> tuple:
        node = self.unary()
        while self.at("==", "!="):
            op = self.take()[1]
            node = (op, node, self.unary())
        return node

    def unary(self) -> tuple:
        if self.at("!"):
            self.take()
            return ("not", self.unary())
        return self.postfix()

    def postfix(self) -> tuple:
        node = self.primary()
        while self.at(".", "["):
            if self.take()[1] == ".":
                kind_, name = self.take()
                if kind_ != "name":
                    raise ExpressionError(f"expected a property name after '.' in {self.text!r}")
                node = ("get", node, ("lit", name))
            else:
                node = ("get", node, self.or_())
                self.take("]")
        return node

    def primary(self) -> tuple:
        kind_, value = self.take()
        if kind_ == "number":
            return ("lit", float(int(value, 16)) if value.startswith("0x") else float(value))
        if kind_ == "string":
            return ("lit", value[1:-1].replace("''", "'"))
        if kind_ == "op":
            if value != "(":
                raise ExpressionError(f"unexpected {value!r} in {self.text!r}")
            node = self.or_()
            self.take(")")
            return node
        if value in ("true", "false"):
            return ("lit", value == "true")
        if value == "null":
            return ("lit", None)
        if self.at("("):
            if value not in FUNCTIONS:
                raise ExpressionError(f"function {value}() is not supported: {self.text!r}")
            self.take("(")
            args = []
            if not self.at(")"):
                args.append(self.or_())
                while self.at(","):
                    self.take()
                    args.append(self.or_())
            self.take(")")
            return ("call", value, tuple(args))
        if value not in CONTEXTS:
            raise ExpressionError(f"context {value!r} is not supported: {self.text!r}")
        return ("ctx", value)


_ARITY = {"always": (0, 0), "success": (0, 0), "failure": (0, 0), "cancelled": (0, 0), "contains": (2, 2),
          "startsWith": (2, 2), "fromJSON": (1, 1), "toJSON": (1, 1), "format": (1, 99), "join": (1, 2)}


def _eval(node: tuple, ctx: Mapping[str, Any], status: Status) -> Any:
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "ctx":
        if node[1] not in ctx:
            raise ExpressionError(f"context {node[1]!r} is not available here")
        return ctx[node[1]]
    if op == "get":
        return get(_eval(node[1], ctx, status), _eval(node[2], ctx, status))
    if op == "not":
        return not truthy(_eval(node[1], ctx, status))
    if op == "and":
        left = _eval(node[1], ctx, status)
        return _eval(node[2], ctx, status) if truthy(left) else left
    if op == "or":
        left = _eval(node[1], ctx, status)
        return left if truthy(left) else _eval(node[2], ctx, status)
    if op in ("==", "!="):
        equal = loose_equal(_eval(node[1], ctx, status), _eval(node[2], ctx, status))
        return equal if op == "==" else not equal
    if op == "call":
        name, arg_nodes = node[1], node[2]
        low, high = _ARITY[name]
        if not low <= len(arg_nodes) <= high:
            raise ExpressionError(f"{name}() takes {low}..{high} arguments, got {len(arg_nodes)}")
        if name in STATUS_FUNCTIONS:
            return {"always": True, "success": status.success and not status.cancelled,
                    "failure": status.failure, "cancelled": status.cancelled}[name]
        args = [_eval(a, ctx, status) for a in arg_nodes]
        if name == "contains":
            return contains(*args)
        if name == "startsWith":
            return to_string(args[0]).casefold().startswith(to_string(args[1]).casefold())
        if name == "fromJSON":
            return from_json(args[0])
        if name == "toJSON":
            return to_json(args[0])
        if name == "format":
            return format_(*args)
        return join(*args)
    raise AssertionError(op)  # pragma: no cover


def evaluate(expression: str, ctx: Mapping[str, Any], status: Status = Status()) -> Any:
    """The value of a bare expression (the text inside `${{ }}`)."""
    return _eval(_Parser(expression).parse(), ctx, status)


def uses_status_function(expression: str) -> bool:
    return any(kind_ == "name" and value in STATUS_FUNCTIONS for kind_, value in tokenize(expression))


def _pieces(text: str) -> list[tuple[str, str]]:
    """A YAML string as ('text', ...) and ('expr', ...) pieces; `}}` inside a string literal is text."""
    out, i = [], 0
    while True:
        start = text.find("${{", i)
        if start < 0:
            out.append(("text", text[i:]))
            return [p for p in out if p[1] or p[0] == "expr"]
        out.append(("text", text[i:start]))
        j, quoted = start + 3, False
        while True:
            if j >= len(text):
                raise ExpressionError(f"unterminated ${{{{ in {text!r}")
            if text[j] == "'":
                quoted = not quoted
            elif not quoted and text.startswith("}}", j):
                break
            j += 1
        out.append(("expr", text[start + 3:j]))
        i = j + 2


def interpolate(value: Any, ctx: Mapping[str, Any], status: Status = Status()) -> Any:
    """A workflow value with its `${{ }}` evaluated: a lone expression keeps its type; text around
    one or more expressions makes a string. Lists and mappings are interpolated item by item."""
    if isinstance(value, list):
        return [interpolate(v, ctx, status) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, ctx, status) for k, v in value.items()}
    if not isinstance(value, str):
        return value
    pieces = _pieces(value)
    if len(pieces) == 1 and pieces[0][0] == "expr" and value.strip() == value:
        return evaluate(pieces[0][1], ctx, status)
    return "".join(p if k == "text" else to_string(evaluate(p, ctx, status)) for k, p in pieces)


def condition(text: Any, ctx: Mapping[str, Any], status: Status) -> bool:
    """A job's or step's `if:`: `${{ }}` optional; without a status function, `success() && (...)`."""
    if text is None:
        return status.success and not status.cancelled
    if isinstance(text, bool):
        text = "true" if text else "false"
    source = str(text).strip()
    pieces = _pieces(source)
    if len(pieces) == 1 and pieces[0][0] == "expr":
        source = pieces[0][1]
    elif any(k == "expr" for k, _ in pieces):
        raise ExpressionError(f"`if:` mixes text and ${{{{ }}}}, which is always true on GitHub: {text!r}")
    if not uses_status_function(source):
        source = f"success() && ({source})"
    return truthy(evaluate(source, ctx, status))


# -- the job graph ------------------------------------------------------------------------------

@dataclass
class Event:
    """What started the run: the event, and what the caller passed to a `workflow_call`."""

    name: str
    payload: dict = field(default_factory=dict)
    inputs: dict = field(default_factory=dict)
    secrets: dict = field(default_factory=dict)
    vars: dict = field(default_factory=dict)
    github: dict = field(default_factory=dict)  # overrides of the github context (ref, sha, run_attempt...)
    cancelled: bool = False


@dataclass
class StepRun:
    id: str | None
    name: str | None
    ran: bool
    outcome: str  # success, failure or skipped
    env: dict
    with_: dict
    outputs: dict
    step: dict


@dataclass
class JobRun:
    """One job, or one entry of its matrix."""

    matrix: dict | None
    name: str
    runs_on: Any
    container: Any
    timeout_minutes: Any
    steps: list[StepRun]
    result: str

    def step(self, key: str) -> StepRun:
        [found] = [s for s in self.steps if key in (s.id, s.name)]
        return found


@dataclass
class JobResult:
    job_id: str
    result: str  # success, failure, cancelled or skipped
    runs: list[JobRun]
    outputs: dict


@dataclass
class Simulation:
    jobs: dict[str, JobResult]
    concurrency: dict

    def ran(self) -> list[str]:
        return [j for j, r in self.jobs.items() if r.result != "skipped"]


StepHook = Callable[[dict], "tuple[str, dict]"]


def workflow_triggers(workflow: dict) -> dict:
    """`on:`, which YAML 1.1 (PyYAML) reads as the key True."""
    on = workflow.get("on", workflow.get(True))
    return on if isinstance(on, dict) else {}


def call_inputs(workflow: dict, given: Mapping[str, Any]) -> dict:
    """The `inputs` context of a called workflow: what the caller gave, else each input's default."""
    declared = workflow_triggers(workflow).get("workflow_call", {}).get("inputs", {})
    unknown = set(given) - set(declared)
    if unknown:
        raise ExpressionError(f"inputs not declared by the workflow: {sorted(unknown)}")
    out = {}
    for name, spec in declared.items():
        if name in given:
            out[name] = given[name]
        elif spec.get("required"):
            raise ExpressionError(f"required input {name!r} not given")
        else:
            out[name] = spec.get("default", "" if spec.get("type") == "string" else None)
    return out


def _needs(job: dict) -> list[str]:
    needs = job.get("needs", [])
    return [needs] if isinstance(needs, str) else list(needs)


def _order(jobs: dict) -> list[str]:
    for job_id, job in jobs.items():
        unknown = [n for n in _needs(job) if n not in jobs]
        if unknown:
            raise ExpressionError(f"job {job_id} needs unknown jobs {unknown}")
    done: list[str] = []
    pending = list(jobs)
    while pending:
        ready = [j for j in pending if all(n in done for n in _needs(jobs[j]))]
        if not ready:
            raise ExpressionError(f"needs form a cycle: {pending}")
        done += ready
        pending = [j for j in pending if j not in ready]
    return done


def expand_matrix(matrix: Any) -> list[dict]:
    """GitHub's expansion: the product of the vectors, minus `exclude`, with `include` merged
    into every combination whose original values it does not change, else added as its own."""
    if not isinstance(matrix, dict):
        raise ExpressionError(f"a matrix must be a mapping, got {matrix!r}")
    vectors = {k: v for k, v in matrix.items() if k not in ("include", "exclude")}
    include, exclude = matrix.get("include", []), matrix.get("exclude", [])
    for name, value in (("include", include), ("exclude", exclude), *vectors.items()):
        if not isinstance(value, list) or (name not in ("include", "exclude") and not value):
            raise ExpressionError(f"matrix {name} must be a non-empty list, got {value!r}")
    product = itertools.product(*vectors.values()) if vectors else ()
    combos = [dict(zip(vectors, values, strict=True)) for values in product]
    combos = [c for c in combos if not any(all(c.get(k) == v for k, v in e.items()) for e in exclude)]
    originals = len(combos)
    for entry in include:
        if not isinstance(entry, dict):
            raise ExpressionError(f"a matrix include entry must be a mapping, got {entry!r}")
        matched = False
        for combo in combos[:originals]:
            if all(combo[k] == v for k, v in entry.items() if k in vectors):
                combo.update(entry)
                matched = True
        if not matched:
            combos.append(dict(entry))
    if not combos:
        raise ExpressionError("the matrix has no combination: GitHub fails the job")
    if len(combos) > 256:
        raise ExpressionError(f"the matrix has {len(combos)} combinations; GitHub allows 256")
    return combos


def _rollup(results: list[str]) -> str:
    for r in ("failure", "cancelled"):
        if r in results:
            return r
    return "success" if results else "skipped"


def simulate(workflow: dict, event: Event, *,
             step_outputs: Mapping[str, Mapping[str, dict]] | None = None,
             hooks: Mapping[tuple[str, str], StepHook] | None = None,
             results: Mapping[str, Callable[[dict | None], str | None]] | None = None,
             kept: Mapping[str, JobResult] | None = None) -> Simulation:
    """Which jobs run, where, with what; see the module docstring.

    - step_outputs: job id -> step id -> outputs of that step (every matrix entry).
    - hooks: (job id, step id) -> f(step) -> (outcome, outputs), `step` holding the evaluated
      `env` and `with` and the job's `matrix`; it replaces step_outputs for that step.
    - results: job id -> f(matrix entry or None) -> a result forced on that entry
      (`failure`, `cancelled`) or None to keep what its steps gave.
    - kept: jobs of an earlier attempt that "Re-run failed jobs" does not run again: their
      results and outputs stand as they were.
    """
    step_outputs, hooks, results, kept = step_outputs or {}, hooks or {}, results or {}, kept or {}
    github = {"event_name": event.name, "event": event.payload, "ref": "refs/heads/main", "sha": "f" * 40,
              "repository": "octo/gpu-repo", "run_id": "1001", "run_attempt": "1", "workflow": "PR Test",
              "server_url": "https://github.com", "actor": "octocat", "token": "***", **event.github}
    base = {"github": github, "inputs": event.inputs, "secrets": {"GITHUB_TOKEN": "***", **event.secrets},
            "vars": event.vars}
    concurrency = interpolate(workflow.get("concurrency", {}), base)
    jobs = workflow["jobs"]
    done: dict[str, JobResult] = {}

    def ancestors(job_id: str) -> set[str]:
        out: set[str] = set()
        for n in _needs(jobs[job_id]):
            out |= {n} | ancestors(n)
        return out

    for job_id in _order(jobs):
        job = jobs[job_id]
        if job_id in kept:
            done[job_id] = kept[job_id]
            continue
        ups = [done[a].result for a in ancestors(job_id)]
        status = Status(success=all(r == "success" for r in ups), failure="failure" in ups,
                        cancelled=event.cancelled)
        ctx = {**base, "needs": {n: {"result": done[n].result, "outputs": done[n].outputs} for n in _needs(job)}}
        if not condition(job.get("if"), ctx, status):
            done[job_id] = JobResult(job_id, "skipped", [], {})
            continue
        matrix_spec = job.get("strategy", {}).get("matrix")
        entries: list[dict | None] = expand_matrix(interpolate(matrix_spec, ctx)) if matrix_spec is not None \
            else [None]
        runs, outputs = [], {}
        for entry in entries:
            jctx = {**ctx, "matrix": entry or {}}
            steps: list[StepRun] = []
            steps_ctx: dict = {}
            for step in job.get("steps", []):
                failed = any(s.outcome == "failure" and not s.step.get("continue-on-error") for s in steps)
                sstatus = Status(success=not failed, failure=failed, cancelled=event.cancelled)
                sctx = {**jctx, "steps": steps_ctx}
                sid = step.get("id")
                if not condition(step.get("if"), sctx, sstatus):
                    run = StepRun(sid, step.get("name"), False, "skipped", {}, {}, {}, step)
                else:
                    env = interpolate(step.get("env", {}), sctx, sstatus)
                    with_ = interpolate(step.get("with", {}), sctx, sstatus)
                    view = {"env": env, "with": with_, "matrix": entry, "step": step}
                    if (job_id, sid) in hooks:
                        outcome, outs = hooks[(job_id, sid)](view)
                    else:
                        outcome, outs = "success", dict(step_outputs.get(job_id, {}).get(sid, {}))
                    run = StepRun(sid, step.get("name"), True, outcome, env, with_, outs, step)
                steps.append(run)
                if sid:
                    steps_ctx[sid] = {"outcome": run.outcome, "conclusion": run.outcome, "outputs": run.outputs}
            forced = results[job_id](entry) if job_id in results else None
            failed = any(s.outcome == "failure" and not s.step.get("continue-on-error") for s in steps)
            result = forced or ("failure" if failed else "success")
            octx = {**jctx, "steps": steps_ctx}
            for name, value in interpolate(job.get("outputs", {}), octx).items():
                if value not in (None, ""):
                    outputs[name] = value
                else:
                    outputs.setdefault(name, "")
            runs.append(JobRun(entry, to_string(interpolate(job.get("name", job_id), jctx)),
                               interpolate(job.get("runs-on"), jctx), interpolate(job.get("container"), jctx),
                               interpolate(job.get("timeout-minutes"), jctx), steps, result))
        done[job_id] = JobResult(job_id, _rollup([r.result for r in runs]), runs, outputs)
    return Simulation(done, concurrency)
