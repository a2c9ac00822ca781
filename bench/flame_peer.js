#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
/*
 * flame_peer.js - the same stacks drawn by d3-flame-graph (SVG, the npm
 * library the issue suggests), to compare with emberprof's canvas page:
 * time to the first render in the page's script, renderer CPU time of the
 * load, DOM elements, and a zoom (its click handler, with transitions
 * off; minFrameSize from EMBER_BENCH_D3_MIN, default 0 as the library
 * has it). Benchmark only: needs `npm ci` in bench/flame-peer (not installed
 * by setup-deps.sh); skipped with a message otherwise.
 *
 *     node bench/flame_peer.js FOLDED OUTDIR
 */
"use strict";
const fs = require("fs");
const path = require("path");
const os = require("os");
const peer = path.join(__dirname, "flame-peer", "node_modules");
if (!fs.existsSync(path.join(peer, "d3-flame-graph"))) {
  console.log("d3-flame-graph: not compared (npm ci in bench/flame-peer)");
  process.exit(0);
}
const { chromium } = require(path.join(__dirname, "..", "tests", "flame", "node_modules", "playwright-core"));
const median = a => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };

/* folded -> d3-flame-graph's nested {name, value, children} */
const root = { name: "all", value: 0, children: [] };
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\n")) {
  const sp = line.lastIndexOf(" ");
  if (sp < 0) continue;
  const v = +line.slice(sp + 1);
  let n = root;
  n.value += v;
  for (const f of line.slice(0, sp).split(";")) {
    let c = n.kids && n.kids.get(f);
    if (!c) {
      c = { name: f, value: 0, children: [] };
      (n.kids || (n.kids = new Map())).set(f, c);
      n.children.push(c);
    }
    c.value += v;
    n = c;
  }
}
const json = JSON.stringify(root, (k, v) => (k === "kids" ? undefined : v));
const out = path.resolve(process.argv[3]);
const page = path.join(out, "big-d3.html");
fs.writeFileSync(path.join(out, "big-d3-data.js"), "window.DATA = " + json + ";");
fs.writeFileSync(page, `<!DOCTYPE html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="file://${peer}/d3-flame-graph/dist/d3-flamegraph.css"></head><body><div id="chart"></div>
<script src="file://${peer}/d3/dist/d3.min.js"></script>
<script src="file://${peer}/d3-flame-graph/dist/d3-flamegraph.min.js"></script>
<script src="big-d3-data.js"></script>
<script>
const t0 = performance.now();
const chart = flamegraph().width(1380).cellHeight(17).transitionDuration(0).minFrameSize(${+(process.env.EMBER_BENCH_D3_MIN || 0)});
d3.select("#chart").datum(DATA).call(chart);
window.result = { first: performance.now() - t0, start: t0, nodes: document.getElementsByTagName("*").length };
window.chart = chart;
</script></body></html>`);
console.log(`d3-flame-graph input: ${json.length} bytes of JSON (a separate file; the library itself ${fs.statSync(path.join(peer, "d3-flame-graph/dist/d3-flamegraph.min.js")).size + fs.statSync(path.join(peer, "d3/dist/d3.min.js")).size} bytes)`);

(async () => {
  const ctx = await chromium.launchPersistentContext(fs.mkdtempSync(path.join(os.tmpdir(), "ember-bench-")), {
    executablePath: process.env.EMBER_CHROMIUM || "/usr/bin/chromium", headless: true,
    viewport: { width: 1400, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--allow-file-access-from-files"],
  });
  const p = await ctx.newPage();
  const blank = path.join(os.tmpdir(), "ember-bench-blank.html");
  fs.writeFileSync(blank, "<p>blank</p>");
  await p.goto("file://" + blank);
  const cdp = await ctx.newCDPSession(p);
  await cdp.send("Performance.enable");
  const metrics = async () => Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics.map(m => [m.name, m.value]));
  const runs = [];
  const N = +(process.env.EMBER_BENCH_D3_LOADS || 3);
  for (let k = 0; k < N; k++) {
    const m0 = await metrics();
    await p.goto("file://" + page, { timeout: 600000 });
    await p.waitForFunction(() => window.result, null, { timeout: 300000, polling: 50 });
    const m1 = await metrics();
    const r = await p.evaluate(() => window.result);
    runs.push({ first: r.first, nav: r.start + r.first, nodes: r.nodes, thread: 1000 * (m1.ThreadTime - m0.ThreadTime), process: 1000 * (m1.ProcessTime - m0.ProcessTime) });
    if (k < N - 1) await p.goto("file://" + blank);
  }
  const zoom = await p.evaluate(() => {
    const ts = [];
    for (const name of ["subsystem1::handler_1_3", "subsystem2::handler_2_7", "dispatch"]) {
      let node = null;
      const all = d3.selectAll("g").data().filter(d => d && d.data && d.data.name === name);
      node = all.sort((a, b) => b.value - a.value)[0];
      const a = performance.now();
      if (node) window.chart.zoomTo(node);
      ts.push(performance.now() - a);
    }
    return ts;
  });
  const f = k => runs.map(r => r[k]);
  console.log(`big-d3.html: first render in the page's script best ${Math.min(...f("first")).toFixed(0)} ms, median ${median(f("first")).toFixed(0)} ms; ` +
    `from navigation start best ${Math.min(...f("nav")).toFixed(0)} ms; renderer CPU for the load: main thread best ${Math.min(...f("thread")).toFixed(0)} ms, ` +
    `process best ${Math.min(...f("process")).toFixed(0)} ms; ${runs[0].nodes} DOM elements; zoom ${zoom.map(z => z.toFixed(0)).join(", ")} ms (of ${N} loads)`);
  await p.screenshot({ path: page.replace(/\.html$/, ".png"), timeout: 300000 }).catch(e => console.log("screenshot: " + e.message.split("\n")[0]));
  await ctx.close();
})().catch(e => { console.error(e); process.exit(1); });
