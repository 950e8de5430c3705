// GitHub's own Actions code, answering tests/github_js.py: one JSON request a line on stdin, one
// JSON answer a line on stdout ({"ok": true, "value": ...} or {"ok": false, "error": "..."}).
//
// - interpolate {value, context, strings}: a workflow value with its `${{ }}` evaluated. The value
//   is read by @actions/workflow-parser's template reader (a lone expression keeps its type, text
//   around expressions becomes its `format()` call) and each expression evaluated by
//   @actions/expressions; with `strings`, a mapping whose values are strings (env, with, outputs).
// - condition {if, context, status}: a job's or step's `if:`, made a condition by the parser's own
//   convertToIfCondition (`success() && (...)` when no status function is named), then evaluated.
// - evaluate {expression, context, status}: a bare expression (the text inside `${{ }}`).
// - coerce {value, other}: the engine's own conversions of a value: string, truthy, and
//   equals(value, other).
// - contexts {definition}: the named contexts GitHub's workflow schema allows in a definition
//   (e.g. "job-if", "step-env"), without its functions.
// - parse {name, content, kind}: a workflow ("workflow") or action ("action") file loaded by
//   @actions/workflow-parser; the value is the list of its errors, each "name (Line: L, Col: C): message".
//
// Only the contexts a request gives may be named (anything else is the parser's "Unrecognized
// named-value"); the status functions exist only where a `status` is given, as on GitHub, where
// they are allowed in `if:` alone. Values are JSON; a non-finite number travels as {"$number": "NaN"}.
import { register } from "node:module";
import { createInterface } from "node:readline";

register(new URL("./json-imports.mjs", import.meta.url));

const { Evaluator, Lexer, Parser, data } = await import("@actions/expressions");
const { equals, truthy } = await import("@actions/expressions/result");
const wp = await import("@actions/workflow-parser");
const { parseAction, convertActionTemplate } = await import("@actions/workflow-parser/actions/index");
const { TemplateSchema } = await import("@actions/workflow-parser/templates/schema/template-schema");
const { JSONObjectReader } = await import("@actions/workflow-parser/templates/json-object-reader");
const { YamlObjectReader } = await import("@actions/workflow-parser/workflows/yaml-object-reader");
const { TemplateContext, TemplateValidationErrors } = await import("@actions/workflow-parser/templates/template-context");
const { readTemplate } = await import("@actions/workflow-parser/templates/template-reader");
const { splitAllowedContext } = await import("@actions/workflow-parser/templates/allowed-context");
const { getWorkflowSchema } = await import("@actions/workflow-parser/workflows/workflow-schema");
const { convertToIfCondition } = await import("@actions/workflow-parser/model/converter/if-condition");
const { TokenType } = await import("@actions/workflow-parser/templates/tokens/types");

class Refused extends Error {}

// -- values -------------------------------------------------------------------------------------

function toData(text) {
  return JSON.parse(text, (key, val) => {
    // The reviver runs inner values first: the "$number" string is already a StringData here.
    if (val && val.constructor === Object && Object.keys(val).length === 1 && val.$number instanceof data.StringData) {
      return new data.NumberData(Number(val.$number.coerceString()));
    }
    return data.reviver(key, val);
  });
}

function fromData(d) {
  switch (d.kind) {
    case data.Kind.Null: return null;
    case data.Kind.Boolean: return d.value;
    case data.Kind.Number: {
      const n = d.number();
      return Number.isFinite(n) ? n : { $number: String(n) };
    }
    case data.Kind.String: return d.coerceString();
    case data.Kind.Array: return d.values().map(fromData);
    default: {
      const out = {};
      for (const { key, value } of d.pairs()) out[key] = fromData(value);
      return out;
    }
  }
}

// -- the template reader, on a schema whose every value may hold an expression --------------------

const STATUS = ["always(0,0)", "failure(0,MAX)", "cancelled(0,0)", "success(0,MAX)"];
const schemas = new Map();

function schemaFor(allowed) {
  const key = allowed.join(",");
  if (!schemas.has(key)) {
    const definitions = {
      value: { context: allowed, "one-of": ["null", "boolean", "number", "string", "sequence", "mapping"] },
      if: { context: allowed, string: {} },
      null: { null: {} },
      boolean: { boolean: {} },
      number: { number: {} },
      string: { string: {} },
      sequence: { sequence: { "item-type": "value" } },
      mapping: { mapping: { "loose-key-type": "string", "loose-value-type": "value" } },
    };
    const text = JSON.stringify({ version: "workflow-v1.0", definitions });
    schemas.set(key, TemplateSchema.load(new JSONObjectReader(undefined, text)));
  }
  return schemas.get(key);
}

function read(root, value, allowed) {
  const context = new TemplateContext(new TemplateValidationErrors(), schemaFor(allowed), new wp.NoOperationTraceWriter());
  const fileId = context.getFileId("value");
  // JSON is YAML; the YAML reader gives each token the position the template reader needs.
  const token = readTemplate(context, root, new YamlObjectReader(fileId, JSON.stringify(value)), fileId);
  return { context, token };
}

function failOnErrors(context) {
  const errors = context.errors.getErrors();
  if (errors.length) throw new Refused(errors.map(e => e.message.replace(/^value(?: \(Line: \d+, Col: \d+\))?: /, "")).join("; "));
}

function statusFunctions(status) {
  const answer = value => (...args) => {
    if (args.length) throw new Refused("status functions with arguments (job names) are not modelled");
    return new data.BooleanData(value);
  };
  const fns = new Map();
  // The runner's rule: success() is false once the run is cancelled; always() is true regardless.
  fns.set("always", { name: "always", minArgs: 0, maxArgs: 0, call: answer(true) });
  fns.set("success", { name: "success", minArgs: 0, maxArgs: 255, call: answer(status.success && !status.cancelled) });
  fns.set("failure", { name: "failure", minArgs: 0, maxArgs: 255, call: answer(status.failure) });
  fns.set("cancelled", { name: "cancelled", minArgs: 0, maxArgs: 0, call: answer(status.cancelled) });
  return fns;
}

function allowedFor(contextNames, status) {
  return status ? [...contextNames, ...STATUS] : [...contextNames];
}

function run(expression, contextData, allowed, status) {
  if (!expression.trim()) throw new Refused("An expression was expected");  // the template reader's words
  const { namedContexts, functions } = splitAllowedContext(allowed);
  const lexed = new Lexer(expression).lex();
  const tree = new Parser(lexed.tokens, namedContexts, functions).parse();
  return new Evaluator(tree, contextData, status ? statusFunctions(status) : undefined).evaluate();
}

function evaluateToken(token, contextData, allowed, status) {
  switch (token.templateTokenType) {
    case TokenType.String: return new data.StringData(token.value);
    case TokenType.Boolean: return new data.BooleanData(token.value);
    case TokenType.Number: return new data.NumberData(token.value);
    case TokenType.Null: return new data.Null();
    case TokenType.BasicExpression: return run(token.expression, contextData, allowed, status);
    case TokenType.Sequence: {
      const out = new data.Array();
      for (let i = 0; i < token.count; i++) out.add(evaluateToken(token.get(i), contextData, allowed, status));
      return out;
    }
    case TokenType.Mapping: {
      const out = new data.Dictionary();
      for (let i = 0; i < token.count; i++) {
        const pair = token.get(i);
        const key = evaluateToken(pair.key, contextData, allowed, status).coerceString();
        out.add(key, evaluateToken(pair.value, contextData, allowed, status));
      }
      return out;
    }
    default:
      throw new Refused(`${token.toDisplayString?.() ?? "this value"} is not supported (template token type ${token.templateTokenType})`);
  }
}

// -- requests -----------------------------------------------------------------------------------

function answer(request) {
  const contextText = request.context === undefined ? "{}" : request.context;
  const names = Object.keys(JSON.parse(contextText));
  const contextData = toData(contextText);
  switch (request.op) {
    case "evaluate":
      return fromData(run(request.expression, contextData, allowedFor(names, request.status), request.status));
    case "interpolate": {
      const allowed = allowedFor(names, null);
      const { context, token } = read("value", request.value, allowed);
      failOnErrors(context);
      const value = evaluateToken(token, contextData, allowed, null);
      if (!request.strings) return fromData(value);
      // A mapping of string fields (env, with, outputs): each value becomes its string, as the
      // runner makes a scalar one; a list or mapping there is refused with the reader's words.
      if (value.kind !== data.Kind.Dictionary) throw new Refused("A mapping was expected");
      const out = {};
      for (const { key, value: item } of value.pairs()) {
        if (item.kind === data.Kind.Array) throw new Refused(`${key}: A sequence was not expected`);
        if (item.kind === data.Kind.Dictionary) throw new Refused(`${key}: A mapping was not expected`);
        out[key] = item.coerceString();
      }
      return out;
    }
    case "condition": {
      const allowed = allowedFor(names, request.status);
      // GitHub reads `if:` as a string: `if: true` is the expression `true`; no `if:` is success().
      const raw = request.if === null ? "" : typeof request.if === "string" ? request.if : String(request.if);
      const { context, token } = read("if", raw, allowed);
      failOnErrors(context);
      const condition = convertToIfCondition(context, token);
      failOnErrors(context);
      const value = run(condition.expression, contextData, allowed, request.status);
      return { value: truthy(value), expression: condition.expression };
    }
    case "coerce": {
      const value = toData(request.value);
      const other = toData(request.other);
      return { string: value.coerceString(), truthy: truthy(value), equals: equals(value, other) };
    }
    case "contexts": {
      const definition = getWorkflowSchema().getDefinition(request.definition);
      return definition.readerContext.filter(name => !name.includes("("));
    }
    case "parse": {
      const file = { name: request.name, content: request.content };
      const trace = new wp.NoOperationTraceWriter();
      if (request.kind === "action") {
        const result = parseAction(file, trace);
        if (result.value) convertActionTemplate(result.context, result.value);
        return result.context.errors.getErrors().map(e => e.message);
      }
      const result = wp.parseWorkflow(file, trace);
      return { pending: result };
    }
    default:
      throw new Refused(`unknown request ${JSON.stringify(request.op)}`);
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  let reply;
  try {
    const request = JSON.parse(line);
    let value = answer(request);
    if (value && value.pending) {
      // A workflow is converted too (jobs, needs, matrices, `if:`), which is asynchronous.
      const result = value.pending;
      if (result.value) await wp.convertWorkflowTemplate(result.context, result.value);
      value = result.context.errors.getErrors().map(e => e.message);
    }
    reply = { ok: true, value };
  } catch (err) {
    reply = { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
}
