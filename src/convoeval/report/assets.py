"""The HTML report's inline CSS and JavaScript (no network, no CDN: the file opens from disk).

The script only sorts the conversations table: it reads scores from the JSON data block and
moves `<tbody>` elements; it never inserts markup, so conversation text cannot become code.
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
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
.meta { color: var(--muted); margin: 0 0 16px; }
.meta dt { font-weight: 600; display: inline; } .meta dd { display: inline; margin: 0 16px 0 4px; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 6px 8px; text-align: left;
  vertical-align: top; }
th { background: var(--bg); font-weight: 600; }
th[data-sort] { cursor: pointer; user-select: none; }
th[data-sort]::after { content: " \\2195"; color: var(--muted); }
th[aria-sort="ascending"]::after { content: " \\2191"; color: var(--fg); }
th[aria-sort="descending"]::after { content: " \\2193"; color: var(--fg); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.score-good { color: var(--good); } .score-bad { color: var(--bad); }
.unscored { color: var(--warn); } .failed { color: var(--bad); font-weight: 600; }
.hists { display: flex; flex-wrap: wrap; gap: 16px; }
.hist { border: 1px solid var(--line); padding: 8px; border-radius: 6px; }
.hist h3 { font-size: 13px; margin: 0 0 4px; }
details > summary { cursor: pointer; color: var(--accent); }
.transcript { margin: 8px 0; max-width: 980px; }
.msg { border-left: 3px solid var(--line); padding: 4px 10px; margin: 6px 0; white-space: pre-wrap;
  overflow-wrap: anywhere; }
.msg .role { font-weight: 600; display: block; white-space: normal; }
.msg.human { border-color: #6b8fd6; } .msg.ai { border-color: #3a9d5d; }
.msg.tool { border-color: #b08900; background: var(--bg); } .msg.system { border-color: #888; }
.call { font-family: ui-monospace, Menlo, monospace; font-size: 12px; white-space: pre-wrap; }
.metric-block { margin: 10px 0; } .metric-block h4 { margin: 4px 0; font-size: 13px; }
.metric-block table { width: auto; font-size: 13px; }
pre { background: var(--bg); padding: 8px; overflow: auto; font-size: 12px; }
.note { color: var(--muted); }
"""

JS = """
(function () {
  "use strict";
  var block = document.getElementById("convoeval-data");
  var data = JSON.parse(block.textContent);
  var byIndex = {};
  data.rows.forEach(function (row) { byIndex[String(row.index)] = row; });
  var table = document.getElementById("conversations");
  if (!table) { return; }
  var state = { key: null, dir: 1 };
  function value(body, key) {
    var row = byIndex[body.getAttribute("data-index")];
    if (!row) { return null; }
    if (key === "index") { return row.index; }
    if (key === "id") { return row.id === null ? null : String(row.id); }
    var v = row.scores[key];
    return (v === null || v === undefined) ? null : v;
  }
  function compare(a, b, key, dir) {
    var x = value(a, key), y = value(b, key);
    if (x === null && y === null) { return value(a, "index") - value(b, "index"); }
    if (x === null) { return 1; }
    if (y === null) { return -1; }
    if (x < y) { return -dir; }
    if (x > y) { return dir; }
    return value(a, "index") - value(b, "index");
  }
  var headers = table.querySelectorAll("th[data-sort]");
  Array.prototype.forEach.call(headers, function (th) {
    th.addEventListener("click", function () {
      var key = th.getAttribute("data-sort");
      state.dir = state.key === key ? -state.dir : 1;
      state.key = key;
      var bodies = Array.prototype.slice.call(table.tBodies);
      bodies.sort(function (a, b) { return compare(a, b, key, state.dir); });
      bodies.forEach(function (body) { table.appendChild(body); });
      Array.prototype.forEach.call(headers, function (other) {
        other.removeAttribute("aria-sort");
      });
      th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
    });
  });
})();
"""


def script_hash() -> str:
    """The CSP source for the report's one script (any other inline script is blocked)."""
    digest = hashlib.sha256(JS.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"
