"""Mermaid's own renderer in the tests: charts drawn by `mermaid` (npm) in headless Chromium.

The charts ci_policy writes into Markdown are checked by what GitHub's renderer draws, not by
their text: `mermaid` (pinned by tests/mermaid_js/package-lock.json; scripts/test.sh installs it
with `npm ci`) runs in Debian's `chromium` (/usr/bin/chromium), driven by `playwright-core`
through tests/mermaid_js/render.mjs. One node process and one browser page serve the whole
pytest session (the `mermaid` fixture in tests/conftest.py); each `render` call draws all its
charts in one round trip, so render many at once.

- In: `Renderer.render(charts)`: chart texts (what stands between ```mermaid and ```), or
  `mermaid_blocks(markdown)` to take them from a document -> one SVG text per chart.
- In: `gantt_bars(svg)`: a Gantt chart's drawn bars, each `Bar(task, name, start, end)` with
  its task id (the `:id,` of the task line, else mermaid's `task<N>`), its label and its start
  and end in the axis' unit, read from the rect's x and width through the axis scale (its tick
  labels and their positions; ci_policy's charts use `axisFormat %s`, seconds from 0), with
  `px`, one pixel in that unit: mermaid draws to whole pixels, so a test compares a bar with
  `pytest.approx(expected, abs=bar.px)`.
- In: `xychart_series(svg)`: a vertical `xychart-beta` chart's plots in the chart's order, each
  `Series(kind, index, points)` with kind `bar` or `line` and per drawn point its x-axis label
  and its value, read from the bar's top or the line's vertex through the y axis' labels (first
  and last), with `px`, one pixel in the y unit. A horizontal chart is not read.
- In: `svg_tree(svg)`: the SVG as an ElementTree element (`SVG` is its namespace) for a chart
  kind without a reader here: write its reader next to `gantt_bars` and `xychart_series`,
  mapping positions through the axis labels as they do.
- Refused, as `MermaidError` with mermaid's own message and the chart's text: a chart mermaid
  cannot parse or draw (a test rendering it fails). `svg_tree` of text that is not XML raises
  ElementTree's ParseError; `gantt_bars` of an SVG without a time axis or task bars raises
  `MermaidError`, and so does `xychart_series` of an SVG without its axes.
- Refused, as `MermaidMissing`: node, Chromium or the npm packages not installed (run
  scripts/test.sh, or `npm ci --prefix tests/mermaid_js --ignore-scripts` and Debian's chromium),
  with that fix in the message; the node process ending, with what it wrote to stderr. The tests
  fail, never skip.

The browser gets a fresh profile directory and flags that keep it off the network (no QUIC, no
background or component-update traffic, no sync, no first-run): the page loads nothing but
mermaid.min.js from disk.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from node_process import NodeProcess

HERE = Path(__file__).resolve().parent / "mermaid_js"
SCRIPT = HERE / "render.mjs"
PACKAGES = ("mermaid", "playwright-core")
CHROMIUM = os.environ.get("CI_POLICY_CHROMIUM", "/usr/bin/chromium")
SVG = "{http://www.w3.org/2000/svg}"
BLOCK = re.compile(r"^```mermaid\n(.*?)^```$", re.S | re.M)
TRANSLATE = re.compile(r"translate\(\s*([-0-9.e]+)(?:[ ,]\s*([-0-9.e]+))?\s*\)")


class MermaidError(Exception):
    """Mermaid refused a chart, or a drawn chart lacks what its reader looks for."""


class MermaidMissing(RuntimeError):
    """node, Chromium or the pinned npm packages are not installed, or the node process ended."""


def mermaid_blocks(markdown: str) -> list[str]:
    """The text of each ```mermaid block of a Markdown document, in order."""
    return BLOCK.findall(markdown)


class Renderer:
    """The node process and its browser, started on first use; `close` ends both."""

    def __init__(self) -> None:
        self._node = NodeProcess(self._start, MermaidMissing, "the mermaid renderer", wait=30)
        self._profile: tempfile.TemporaryDirectory[str] | None = None

    def _start(self, stderr: IO[str]) -> subprocess.Popen[str]:
        node = shutil.which("node")
        if node is None:
            raise MermaidMissing("node is not installed: the chart tests draw charts with mermaid on node (>= 20); "
                                 "install Debian's nodejs and npm")
        if not os.access(CHROMIUM, os.X_OK):
            raise MermaidMissing(f"{CHROMIUM} is not installed: the chart tests draw charts in headless Chromium; "
                                 "run scripts/test.sh, or apt-get install chromium (or set CI_POLICY_CHROMIUM)")
        missing = [p for p in PACKAGES if not (HERE / "node_modules" / p / "package.json").is_file()]
        if missing:
            raise MermaidMissing(f"{', '.join(missing)} not installed in tests/mermaid_js/node_modules: "
                                 "run scripts/test.sh, or `npm ci --prefix tests/mermaid_js --ignore-scripts`")
        if self._profile is not None:  # a renderer that ended: its browser's profile goes with it
            self._profile.cleanup()
        self._profile = tempfile.TemporaryDirectory(prefix="mermaid-chromium-")
        return subprocess.Popen([node, str(SCRIPT), CHROMIUM, self._profile.name], cwd=HERE,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                text=True, encoding="utf-8", bufsize=1)

    def close(self) -> None:
        self._node.close()
        if self._profile is not None:
            self._profile.cleanup()
            self._profile = None

    def render(self, charts: Sequence[str]) -> list[str]:
        """Each chart's SVG; the first chart mermaid refuses raises `MermaidError`."""
        line = self._node.exchange(json.dumps({"charts": list(charts)}))
        answer = json.loads(line)
        if not answer["ok"]:
            raise MermaidMissing(f"the mermaid renderer failed: {answer['error']}")
        out = []
        for chart, drawn in zip(charts, answer["value"], strict=True):
            if "error" in drawn:
                raise MermaidError(f"mermaid refused the chart: {drawn['error']}\n{chart}")
            out.append(drawn["svg"])
        return out


def svg_tree(svg: str) -> ET.Element:
    return ET.fromstring(svg)


@dataclass(frozen=True)
class Bar:
    task: str
    name: str
    start: float
    end: float
    px: float  # one pixel in the axis' unit: how exactly start and end are drawn


def _classes(element: ET.Element) -> list[str]:
    return element.get("class", "").split()


def _translate_x(element: ET.Element) -> float:
    found = TRANSLATE.search(element.get("transform", ""))
    return float(found.group(1)) if found else 0.0


def gantt_bars(svg: str) -> list[Bar]:
    """The drawn bars of a Gantt chart, in the SVG's order (mermaid sorts the tasks by start)."""
    root = svg_tree(svg)
    chart_id = root.get("id", "")
    grid = next((g for g in root.iter(f"{SVG}g") if "grid" in _classes(g)), None)
    if grid is None:
        raise MermaidError("no time axis (g.grid) in the drawn chart")
    ticks = []
    for tick in grid.iter(f"{SVG}g"):
        label = tick.find(f"{SVG}text")
        if "tick" in _classes(tick) and label is not None and label.text:
            # d3 draws an axis half a pixel off (crisp lines on a 1x screen); bars are not.
            ticks.append((_translate_x(grid) + _translate_x(tick) - 0.5, float(label.text)))
    if len(ticks) < 2:
        raise MermaidError(f"the time axis has {len(ticks)} labelled tick(s); at least 2 give its scale")
    (x0, v0), (x1, v1) = ticks[0], ticks[-1]
    per_px = (v1 - v0) / (x1 - x0)
    texts = {t.get("id"): "".join(t.itertext()).strip() for t in root.iter(f"{SVG}text") if t.get("id")}
    bars = []
    for rect in root.iter(f"{SVG}rect"):
        if "task" not in _classes(rect):
            continue
        rect_id = rect.get("id", "")
        task = rect_id.removeprefix(f"{chart_id}-")
        x, width = float(rect.get("x", "nan")), float(rect.get("width", "nan"))
        start = v0 + (x - x0) * per_px
        bars.append(Bar(task, texts.get(f"{rect_id}-text", ""), start, start + width * per_px, per_px))
    if not bars:
        raise MermaidError("no task bars (rect.task) in the drawn chart")
    return bars


@dataclass(frozen=True)
class Series:
    kind: str  # "bar" or "line"
    index: int  # the plot's place in the chart (mermaid's `bar-plot-N` / `line-plot-N`)
    points: tuple[tuple[str, float], ...]  # (x-axis label, value), left to right
    px: float  # one pixel in the y axis' unit


def _translate(element: ET.Element) -> tuple[float, float]:
    found = TRANSLATE.search(element.get("transform", ""))
    if not found:
        return 0.0, 0.0
    return float(found.group(1)), float(found.group(2) or 0)


def _axis(root: ET.Element, name: str) -> ET.Element:
    axis = next((g for g in root.iter(f"{SVG}g") if name in _classes(g)), None)
    if axis is None:
        raise MermaidError(f"no {name} (g.{name}) in the drawn chart")
    return axis


def xychart_series(svg: str) -> list[Series]:
    """The bar and line plots of a vertical xychart-beta chart, in the chart's order."""
    root = svg_tree(svg)
    left = [(_translate(t)[1], float(text)) for t in _axis(root, "left-axis").iter(f"{SVG}text")
            if re.fullmatch(r"-?[0-9.]+", text := "".join(t.itertext()).strip())]
    if len(left) < 2:
        raise MermaidError(f"the y axis has {len(left)} numeric label(s); at least 2 give its scale")
    (y0, v0), (y1, v1) = left[0], left[-1]
    per_px = (v1 - v0) / (y1 - y0)
    bottom = [(_translate(t)[0], "".join(t.itertext()).strip()) for t in _axis(root, "bottom-axis").iter(f"{SVG}text")]
    if not bottom:
        raise MermaidError("the x axis has no labels")

    def label_at(x: float) -> str:
        return min(bottom, key=lambda b: abs(b[0] - x))[1]

    def value_at(y: float) -> float:
        return v0 + (y - y0) * per_px

    out = []
    for g in root.iter(f"{SVG}g"):
        for name in _classes(g):
            kind, _, index = name.rpartition("-plot-")
            if kind not in ("bar", "line") or not index.isdigit():
                continue
            if kind == "bar":
                points = [(float(r.get("x", "nan")) + float(r.get("width", "nan")) / 2, float(r.get("y", "nan")))
                          for r in g.iter(f"{SVG}rect")]
            else:
                path = g.find(f"{SVG}path")
                d = path.get("d", "") if path is not None else ""
                points = [(float(x), float(y)) for x, y in re.findall(r"[ML]\s*([-0-9.e]+)[ ,]([-0-9.e]+)", d)]
            points.sort()
            out.append(Series(kind, int(index), tuple((label_at(x), value_at(y)) for x, y in points), abs(per_px)))
    return sorted(out, key=lambda series: series.index)
