// Mermaid's own renderer in headless Chromium, answering tests/mermaid_render.py: one JSON request
// a line on stdin ({"charts": ["gantt\n...", ...]}), one JSON answer a line on stdout
// ({"ok": true, "value": [{"svg": "<svg ..."} or {"error": "..."}, ...]} or {"ok": false, "error": "..."}).
//
// One browser and one page for the whole process: mermaid.min.js (tests/mermaid_js/node_modules,
// pinned by package-lock.json) is loaded into a blank page once, and each request renders its
// charts in that page with mermaid.render (parse, layout with the browser's text measures, SVG).
// A chart mermaid refuses is that chart's {"error"}, the others still render.
//
// argv[2]: the Chromium executable; argv[3]: a fresh user data directory. The machine's network
// may be closed: the page loads nothing from the network and the browser is told not to try.
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const [executablePath, userDataDir] = process.argv.slice(2);
const MERMAID = fileURLToPath(new URL("./node_modules/mermaid/dist/mermaid.min.js", import.meta.url));

const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1600, height: 1200 },
});
const page = context.pages()[0] ?? await context.newPage();
await page.setContent("<!doctype html><html><body></body></html>");
await page.addScriptTag({ path: MERMAID });
await page.evaluate(() => {
  // htmlLabels off: every label is SVG text, so the drawn SVG is all there is to read.
  window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", htmlLabels: false,
                              flowchart: { htmlLabels: false } });
});

let serial = 0;
async function render(charts) {
  const first = serial;
  serial += charts.length;
  return await page.evaluate(async ({ charts, first }) => {
    const out = [];
    for (let i = 0; i < charts.length; i++) {
      try {
        const { svg } = await window.mermaid.render(`chart${first + i}`, charts[i]);
        out.push({ svg });
      } catch (e) {
        out.push({ error: String(e && e.message ? e.message : e) });
      }
    }
    return out;
  }, { charts, first });
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  let answer;
  try {
    const request = JSON.parse(line);
    answer = { ok: true, value: await render(request.charts) };
  } catch (e) {
    answer = { ok: false, error: String(e && e.stack ? e.stack : e) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
await context.close();
