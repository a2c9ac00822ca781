#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
/*
 * flame_render.js - opens flame graph pages in headless chromium and
 * prints, per page, the time the page's script takes to the first full
 * render (its own measure: parsing the data, building the tree, drawing
 * graph and table; best and median of 5 loads) and to the `ready` flag
 * seen from outside, then 5 zooms and 5 searches (each: recompute and
 * redraw).
 * Used by bench/flame.sh; needs tests/flame's playwright-core.
 *
 *     node bench/flame_render.js PAGE.html...
 */
"use strict";
const path = require("path");
const fs = require("fs");
const os = require("os");
const { chromium } = require(path.join(__dirname, "..", "tests", "flame", "node_modules", "playwright-core"));

const median = a => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };

(async () => {
  const ctx = await chromium.launchPersistentContext(fs.mkdtempSync(path.join(os.tmpdir(), "ember-bench-")), {
    executablePath: process.env.EMBER_CHROMIUM || "/usr/bin/chromium", headless: true,
    viewport: { width: 1400, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  await ctx.route("**/*", r => r.request().url().startsWith("file://") ? r.continue() : r.abort());
  for (const file of process.argv.slice(2)) {
    /* First render: the best and median of 5 loads (the machine is shared;
       the best is the least disturbed). */
    /* CPU time of the renderer, from the DevTools protocol's metrics:
       its main thread (ThreadTime) and the whole process (ProcessTime),
       between leaving a blank page and the page being ready; unlike wall
       time, this does not grow when other processes take the CPU. */
    const loads = [];
    const blank = path.join(os.tmpdir(), "ember-bench-blank.html");
    fs.writeFileSync(blank, "<p>blank</p>");
    const page = await ctx.newPage();
    await page.goto("file://" + blank);
    const cdp = await ctx.newCDPSession(page);
    await cdp.send("Performance.enable");
    const metrics = async () => Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics.map(m => [m.name, m.value]));
    for (let k = 0; k < 5; k++) {
      const m0 = await metrics();
      const t0 = Date.now();
      await page.goto("file://" + path.resolve(file));
      await page.waitForFunction(() => window.emberFlame && window.emberFlame.ready, null, { timeout: 60000, polling: 10 });
      const outside = Date.now() - t0;
      const m1 = await metrics();
      loads.push(Object.assign({ outside, thread: 1000 * (m1.ThreadTime - m0.ThreadTime), process: 1000 * (m1.ProcessTime - m0.ProcessTime) },
        await page.evaluate(() => window.emberFlame.timing)));
      if (k < 4) await page.goto("file://" + blank);
    }
    const r = await page.evaluate(() => {
      const api = window.emberFlame;
      const zooms = [], searches = [];
      const names = ["subsystem1::handler_1_3", "subsystem2::handler_2_7", "subsystem0::handler_0_1", "dispatch", "subsystem3::handler_3_5"];
      for (const n of names) zooms.push(api.timeZoom(n));
      for (const re of ["handler_4_[0-4]", "subsystem2", "handler_3_9$", "^main$", "1_1|2_2"]) searches.push(api.timeSearch(re));
      return { zooms, searches, drawn: api.rects().length };
    });
    const nav = loads.map(l => l.scriptStart + l.firstRender);
    const fr = loads.map(l => l.firstRender), best = loads.reduce((a, b) => a.firstRender < b.firstRender ? a : b);
    console.log(`${path.basename(file)}: first render in the page's script best ${Math.min(...fr).toFixed(0)} ms, median ${median(fr).toFixed(0)} ms ` +
      `(best: JSON parsed at ${best.parse.toFixed(0)}, tree at ${best.tree.toFixed(0)}); from navigation start to rendered best ${Math.min(...nav).toFixed(0)} ms, median ${median(nav).toFixed(0)} ms; ` +
      `renderer CPU for the load: main thread best ${Math.min(...loads.map(l => l.thread)).toFixed(0)} ms, median ${median(loads.map(l => l.thread)).toFixed(0)} ms, ` +
      `process best ${Math.min(...loads.map(l => l.process)).toFixed(0)} ms, median ${median(loads.map(l => l.process)).toFixed(0)} ms; ready seen from outside after goto best ${Math.min(...loads.map(l => l.outside))} ms; ` +
      `zoom best ${Math.min(...r.zooms).toFixed(1)} ms, median ${median(r.zooms).toFixed(1)} ms; ` +
      `search best ${Math.min(...r.searches).toFixed(1)} ms, median ${median(r.searches).toFixed(1)} ms; ${r.drawn} frames drawn at the last step`);
    await page.screenshot({ path: file.replace(/\.html$/, ".png") });
    await page.close();
  }
  await ctx.close();
})().catch(e => { console.error(e); process.exit(1); });
