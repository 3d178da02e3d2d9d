"""The HTML report's inline CSS and JavaScript (no network, no CDN: the file opens from disk).

The script sorts, searches, filters and pages the conversations: it reads scores from the JSON
data block, moves and hides the server-rendered rows, and writes only counts with `textContent`;
it never inserts markup, so conversation text cannot become code.
"""

from __future__ import annotations

import base64
import hashlib

CSS = """
:root { --fg: #1d232a; --muted: #5b6570; --line: #d9dee3; --bg: #f7f8fa; --good: #1f7a3a;
  --bad: #b42318; --warn: #a15c00; --accent: #2f5fa8; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  margin: 0; padding: 24px 32px; background: #fff; }
bdi { unicode-bidi: isolate; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
.meta { color: var(--muted); margin: 0 0 16px; }
.meta dt { font-weight: 600; display: inline; } .meta dd { display: inline; margin: 0 16px 0 4px; }
table { border-collapse: collapse; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left;
  vertical-align: top; }
th { background: var(--bg); font-weight: 600; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.score-good { color: var(--good); } .score-bad { color: var(--bad); }
.unscored { color: var(--warn); } .failed { color: var(--bad); font-weight: 600; }
.hists { display: flex; flex-wrap: wrap; gap: 16px; }
.hist { border: 1px solid var(--line); padding: 8px; border-radius: 6px; min-width: 180px; }
.hist h3 { font-size: 13px; margin: 0 0 4px; }
.hist .empty { color: var(--warn); margin: 30px 0; text-align: center; }
.controls { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
.controls input[type=search] { min-width: 16em; } .controls input[type=number] { width: 6em; }
.convs { border-top: 1px solid var(--line); overflow-x: auto; }
.conv-head [data-sort] { white-space: nowrap; }
.conv > summary, .conv-head { display: grid; gap: 8px; padding: 5px 8px;
  border-bottom: 1px solid var(--line); align-items: baseline; }
.conv-head { background: var(--bg); font-weight: 600; }
.conv-head [data-sort] { cursor: pointer; user-select: none; }
.conv-head [data-sort]::after { content: " \\2195"; color: var(--muted); }
.conv-head [aria-sort="ascending"]::after { content: " \\2191"; color: var(--fg); }
.conv-head [aria-sort="descending"]::after { content: " \\2193"; color: var(--fg); }
.conv > summary { cursor: pointer; list-style: none; }
.conv > summary::-webkit-details-marker { display: none; }
.conv > summary:hover { background: var(--bg); }
.conv > summary .id { overflow-wrap: anywhere; }
.conv > summary .id::before { content: "\\25B8  "; color: var(--accent); }
.conv[open] > summary .id::before { content: "\\25BE  "; }
.conv[open] > summary { background: #eef3fb; }
.conv .body { padding: 4px 12px 12px 3.5em; border-bottom: 1px solid var(--line); }
.transcript { margin: 8px 0; max-width: 980px; }
.msg { border-left: 3px solid var(--line); padding: 4px 10px; margin: 6px 0; white-space: pre-wrap;
  overflow-wrap: anywhere; }
.msg .role { font-weight: 600; display: block; white-space: normal; }
.msg.human { border-color: #6b8fd6; } .msg.ai { border-color: #3a9d5d; }
.msg.tool { border-color: #b08900; background: var(--bg); } .msg.system { border-color: #888; }
.call, .diffs { font-family: ui-monospace, Menlo, monospace; font-size: 12px;
  white-space: pre-wrap; overflow-wrap: anywhere; }
.diffs { margin: 0; padding-left: 16px; }
.refs { color: var(--muted); }
.metric-block { margin: 10px 0; } .metric-block h4 { margin: 4px 0; font-size: 13px; }
.metric-block table, .refs table { font-size: 13px; }
.note { color: var(--muted); }
"""

JS = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("convoeval-data").textContent);
  var list = document.getElementById("conversations");
  if (!list) { return; }
  var PAGE = 100;
  var rows = data.rows, nodes = {}, texts = null;
  Array.prototype.forEach.call(list.querySelectorAll("details.conv"), function (el) {
    nodes[el.getAttribute("data-index")] = el;
  });
  function $(id) { return document.getElementById(id); }
  var query = $("f-text"), metric = $("f-metric"), low = $("f-min"), high = $("f-max"),
    status = $("f-status"), prev = $("f-prev"), next = $("f-next");
  var state = { key: "index", dir: 1, page: 0 };
  var current = rows;  // the rows shown now: all of them until the first render
  function number(input) {
    var v = input.value.trim();
    return v === "" || isNaN(Number(v)) ? null : Number(v);
  }
  function textOf(row) {
    if (texts === null) {
      texts = {};
      rows.forEach(function (r) {
        texts[r.index] = (String(r.id) + " " + nodes[r.index].textContent).toLowerCase();
      });
    }
    return texts[row.index];
  }
  function keep(row) {
    var needle = query.value.trim().toLowerCase();
    if (needle && textOf(row).indexOf(needle) < 0) { return false; }
    var names = metric.value ? [metric.value] : data.metrics;
    var want = status.value;
    if (want && !names.some(function (n) {
      var failed = row.failed.indexOf(n) >= 0;
      var unscored = !failed && (row.scores[n] === null || row.scores[n] === undefined);
      return want === "failed" ? failed : want === "unscored" ? unscored : failed || unscored;
    })) { return false; }
    var a = number(low), b = number(high);
    if (a === null && b === null) { return true; }
    return names.some(function (n) {
      var v = row.scores[n];
      return v !== null && v !== undefined && (a === null || v >= a) && (b === null || v <= b);
    });
  }
  function key(row) {
    if (state.key === "index") { return row.index; }
    if (state.key === "id") { return row.id === null ? null : String(row.id); }
    var v = row.scores[state.key];
    return v === undefined ? null : v;
  }
  function compare(a, b) {
    var x = key(a), y = key(b);
    if (x === y || (x === null && y === null)) { return a.index - b.index; }
    if (x === null) { return 1; }
    if (y === null) { return -1; }
    return (x < y ? -1 : 1) * state.dir;
  }
  function render() {
    var shown = rows.filter(keep).sort(compare);
    var pages = Math.max(1, Math.ceil(shown.length / PAGE));
    state.page = Math.max(0, Math.min(state.page, pages - 1));
    var first = state.page * PAGE, page = shown.slice(first, first + PAGE);
    var same = page.length === current.length &&
      page.every(function (row, i) { return row === current[i]; });
    if (!same) {  // touch only the rows that leave or join the page
      current.forEach(function (row) { nodes[row.index].hidden = true; });
      page.forEach(function (row) {
        nodes[row.index].hidden = false;
        list.appendChild(nodes[row.index]);
      });
      current = page;
    }
    $("f-page").textContent = "page " + (state.page + 1) + " of " + pages;
    $("f-count").textContent = shown.length === 0 ? "no conversation matches" :
      "showing " + (first + 1) + "-" + (first + page.length) + " of " + shown.length +
      " matching (" + rows.length + " listed)";
    prev.disabled = state.page === 0;
    next.disabled = state.page >= pages - 1;
  }
  function again() { state.page = 0; render(); }
  [query, low, high].forEach(function (el) { el.addEventListener("input", again); });
  [metric, status].forEach(function (el) { el.addEventListener("change", again); });
  prev.addEventListener("click", function () { state.page -= 1; render(); });
  next.addEventListener("click", function () { state.page += 1; render(); });
  var headers = list.querySelectorAll(".conv-head [data-sort]");
  Array.prototype.forEach.call(headers, function (head) {
    head.setAttribute("role", "button");
    head.setAttribute("tabindex", "0");
    function sort() {
      var k = head.getAttribute("data-sort");
      state.dir = state.key === k ? -state.dir : 1;
      state.key = k;
      Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
      head.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
      render();
    }
    head.addEventListener("click", sort);
    head.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
  });
  $("controls").hidden = false;
  render();
})();
"""


def script_hash() -> str:
    """The CSP source for the report's one script (any other inline script is blocked)."""
    digest = hashlib.sha256(JS.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


#: The Content-Security-Policy of the report pages: no network, no script but the report's own.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    f"script-src {script_hash()}; base-uri 'none'; form-action 'none'"
)
