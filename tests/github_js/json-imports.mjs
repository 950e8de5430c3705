// @actions/workflow-parser imports its JSON schemas without an import attribute, which node
// refuses ("needs an import attribute of type json"); this load hook supplies the attribute.
// Registered by bridge.mjs through module.register before the parser is imported.
export async function load(url, context, nextLoad) {
  if (url.endsWith(".json")) {
    return nextLoad(url, { ...context, importAttributes: { ...context.importAttributes, type: "json" } });
  }
  return nextLoad(url, context);
}
