#include <strata/gpu/caching/snapshot.hpp>

#include <string>

namespace strata::gpu {

namespace {

// The page around the data: styles, the places the script fills, and the
// script itself. Nothing is fetched, so the page opens from a file anywhere.
constexpr const char* page_head = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>strata GPU caching allocator snapshot</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}
.legend span{display:inline-block;margin-right:1.2em}
.swatch{display:inline-block;width:.9em;height:.9em;vertical-align:middle;margin-right:.3em}
.segment{margin:.4em 0}.label{font:12px monospace;color:#555}
.bar{display:flex;height:22px;border:1px solid #888;background:#eee}
.block{height:100%;box-sizing:border-box;border-right:1px solid #fff;min-width:1px}
.active_allocated{background:#3b7dd8}.active_pending_free{background:#e0a030}.inactive{background:#cfd8dc}
table{border-collapse:collapse;font:12px monospace}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
#tip{position:fixed;display:none;background:#222;color:#fff;padding:4px 8px;font:12px monospace;border-radius:3px;pointer-events:none}
</style></head><body>
<h1>strata GPU caching allocator snapshot</h1>
<p id="summary"></p>
<div class="legend"><span><i class="swatch active_allocated"></i>allocated</span><span><i class="swatch active_pending_free"></i>freed, waiting for events</span><span><i class="swatch inactive"></i>free (cached)</span></div>
<h2>Segments</h2><div id="segments"></div>
<h2>Statistics</h2><div id="stats"></div>
<h2>Trace (oldest first)</h2><div id="trace"></div>
<div id="tip"></div>
<script type="application/json" id="snapshot">)";

constexpr const char* page_tail = R"(</script>
<script>
"use strict";
const snap = JSON.parse(document.getElementById("snapshot").textContent);
function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let u = 0;
  while (n >= 1024 && u < units.length - 1) { n /= 1024; ++u; }
  return (u ? n.toFixed(2) : n) + " " + units[u];
}
const hex = (n) => "0x" + n.toString(16);
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
const tip = document.getElementById("tip");
function hover(e, text) {
  e.addEventListener("mousemove", (ev) => {
    tip.style.display = "block"; tip.textContent = text;
    tip.style.left = (ev.clientX + 12) + "px"; tip.style.top = (ev.clientY + 12) + "px";
  });
  e.addEventListener("mouseleave", () => { tip.style.display = "none"; });
}
const all = snap.stats.all;
document.getElementById("summary").textContent =
  snap.segments.length + " segments; reserved " + bytes(all.reserved_bytes.current) +
  ", allocated " + bytes(all.allocated_bytes.current) + ", active " + bytes(all.active_bytes.current) +
  "; device " + bytes(snap.device_free) + " free of " + bytes(snap.device_total) + ".";
const largest = Math.max(1, ...snap.segments.map((s) => s.total_size));
const segs = document.getElementById("segments");
for (const s of snap.segments) {
  const row = el("div", "segment");
  row.appendChild(el("div", "label", hex(s.address) + "  " + s.segment_type + "  " + bytes(s.total_size) +
    "  stream " + hex(s.stream) + "  allocated " + bytes(s.allocated_size)));
  const bar = el("div", "bar");
  bar.style.width = Math.max(5, 100 * s.total_size / largest) + "%";
  for (const b of s.blocks) {
    const blk = el("div", "block " + b.state);
    blk.style.width = (100 * b.size / s.total_size) + "%";
    hover(blk, hex(b.address) + " +" + b.offset + "  " + bytes(b.size) + "  " + b.state +
      (b.requested_size ? "  requested " + bytes(b.requested_size) : "") + "  stream " + hex(b.stream));
    bar.appendChild(blk);
  }
  row.appendChild(bar);
  segs.appendChild(row);
}
function table(parent, head, rows) {
  const t = el("table");
  const h = el("tr");
  for (const c of head) h.appendChild(el("th", "", c));
  t.appendChild(h);
  for (const r of rows) {
    const tr = el("tr");
    for (const c of r) tr.appendChild(el("td", "", String(c)));
    t.appendChild(tr);
  }
  parent.appendChild(t);
}
const statsDiv = document.getElementById("stats");
const rows = [];
for (const pool of ["all", "small_pool", "large_pool"])
  for (const [name, v] of Object.entries(snap.stats[pool]))
    rows.push([pool, name, v.current, v.peak, v.allocated, v.freed]);
table(statsDiv, ["pool", "statistic", "current", "peak", "allocated", "freed"], rows);
const counts = ["cache_hits", "cache_misses", "cross_stream_reuses", "num_alloc_retries", "num_ooms",
  "num_device_allocs", "num_device_frees"].map((k) => [k, snap.stats[k]]);
table(statsDiv, ["counter", "value"], counts);
table(document.getElementById("trace"), ["#", "action", "address", "size", "stream"],
  snap.device_traces[0].map((t) => [t.sequence, t.action, hex(t.addr), bytes(t.size), hex(t.stream)]));
</script></body></html>
)";

}  // namespace

// The JSON sits inside the page as data: it holds only numbers and fixed
// words, so it can never close the script element early.
std::string to_html(const memory_snapshot& snapshot) {
  return std::string(page_head) + to_json(snapshot) + page_tail;
}

}  // namespace strata::gpu
