#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
/*
 * browser_test.js - the pages of `emberprof flame` and `emberprof diff`
 * opened in Debian's chromium (headless, driven by playwright-core), and
 * checked the way a person uses them: through the DOM, the mouse and the
 * geometry of what the canvas drew (window.emberFlame.rects()).
 *
 * Profiles come from the demo run under `emberprof run`: two runs at its
 * default 75/25 split (the first with --wall too) and one at --split 50.
 * The reference numbers come from `go tool pprof` (Go's own reader), not
 * from emberprof. Checked: hot_a's width, hover details, the icicle
 * toggle, search highlighting and matched share, click to zoom, the
 * breadcrumb and reset, a thread_id filter, the type selector, the table's
 * sorting and its link to the graph and the callers view, the wall page's
 * thread_state filter; the diff of 50/50 against 75/25 (shift within 2
 * points of go's numbers, significant, red and blue) and of two 75/25 runs
 * (nothing significant). A 60-frame recursion (deep.c): the root frame
 * is on the first screen of a 1400x900 window, in the flame graph and the
 * icicle, the graph takes the window's width, the title names the program.
 *
 * Every request that leaves file:// fails the test. Screenshots go to
 * $EMBER_TEST_BINDIR/flame-*.png. Exit 77 (skip) with a reason when
 * chromium, playwright-core or go is missing.
 *
 * Environment: EMBERPROF, EMBER_DEMO, EMBER_FLAME_DEEP, EMBER_TEST_BINDIR.
 */
"use strict";
const fs = require("fs");
const path = require("path");
const os = require("os");
const { execFileSync } = require("child_process");

const CHROMIUM = process.env.EMBER_CHROMIUM || "/usr/bin/chromium";
function skip(why) { console.log("SKIP: " + why); process.exit(77); }
if (!fs.existsSync(CHROMIUM)) skip(CHROMIUM + " is absent (scripts/setup-deps.sh installs Debian's chromium)");
let chromium;
try { ({ chromium } = require(path.join(__dirname, "node_modules", "playwright-core"))); }
catch (e) { skip("playwright-core is not installed in tests/flame (npm ci there; scripts/setup-deps.sh does it)"); }
try { execFileSync("go", ["version"], { stdio: "ignore" }); } catch (e) { skip("go is absent: `go tool pprof` gives the reference numbers"); }
if (process.env.EMBER_TEST_SANITIZE === "ON") skip("the pages are the same in the sanitizer build; tested in the normal build (test_flame_input.sh runs flame and diff under ASan)");

const EMBERPROF = process.env.EMBERPROF, DEMO = process.env.EMBER_DEMO;
const BINDIR = process.env.EMBER_TEST_BINDIR || process.cwd();
if (!EMBERPROF || !DEMO) { console.error("EMBERPROF and EMBER_DEMO must be set"); process.exit(1); }
const work = fs.mkdtempSync(path.join(os.tmpdir(), "ember-flame-"));

let failures = 0;
function check(ok, what) {
  console.log((ok ? "ok    " : "FAIL  ") + what);
  if (!ok) failures++;
}

/* Runs the demo under emberprof; returns its pprof files. */
function profileDemo(name, extra, runOpts = []) {
  const dir = path.join(work, name);
  /* 250 Hz: about 750 samples a run, enough for the shift to stand well
     above the noise even when a loaded machine blurs the split */
  execFileSync(EMBERPROF, ["run", "--thread-labels", "--rate", "250", "-q", "-o", dir, ...runOpts, "--", DEMO, "--threads", "2", "--seconds", "1.5", ...extra],
    { stdio: ["ignore", "ignore", "inherit"] });
  return fs.readdirSync(dir).filter(f => f.endsWith(".pb.gz")).map(f => path.join(dir, f));
}
const cpuFiles = files => files.filter(f => !f.endsWith(".wall.pb.gz"));
const wallFiles = files => files.filter(f => f.endsWith(".wall.pb.gz"));

/* `go tool pprof -top` of files: {function: {flat, cum}} in percent. */
function pprofTop(files, extra = []) {
  const out = execFileSync("go", ["tool", "pprof", "-top", "-nodecount=1000", ...extra, ...files], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  const rows = {};
  for (const line of out.split("\n")) {
    const m = line.trim().match(/^\S+\s+([\d.]+)%\s+[\d.]+%\s+\S+\s+([\d.]+)%\s+(.+)$/);
    if (m) rows[m[3].trim()] = { flat: +m[1], cum: +m[2] };
  }
  return rows;
}

/* `go tool pprof -tags`: {key: {value: percent}} */
function pprofTags(files) {
  const out = execFileSync("go", ["tool", "pprof", "-tags", ...files], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  const tags = {};
  let key = null;
  for (const line of out.split("\n")) {
    let m = line.match(/^\s*(\S+): Total/);
    if (m) { key = m[1]; tags[key] = {}; continue; }
    m = line.match(/\(\s*([\d.]+)%\):\s*(.+)$/);
    if (m && key) tags[key][m[2].trim()] = +m[1];
  }
  return tags;
}

/* Every request outside file:// is blocked and recorded here. */
const outsideAll = [];
async function openPage(context, file, shot) {
  const outside = [];
  const page = await context.newPage();
  page.on("request", req => { if (!req.url().startsWith("file://")) outside.push(req.url()); });
  const errors = [];
  page.on("pageerror", e => errors.push(String(e)));
  await page.goto("file://" + file);
  await page.waitForFunction(() => window.emberFlame && window.emberFlame.ready, null, { timeout: 30000 });
  return { page, outside, errors, shot };
}

async function closePage(p) {
  await p.page.screenshot({ path: path.join(BINDIR, p.shot), fullPage: true });
  check(p.outside.length === 0, p.shot + ": no request left file:// (" + (p.outside.join(", ") || "none") + ")");
  check(p.errors.length === 0, p.shot + ": no script error (" + (p.errors.join("; ") || "none") + ")");
  await p.page.close();
}

const rects = (page, which) => page.evaluate(w => window.emberFlame.rects(w), which);

async function flamePage(context, files) {
  const html = path.join(work, "flame.html");
  execFileSync(EMBERPROF, ["flame", "--title", "demo", "-o", html, ...files], { stdio: "inherit" });
  const ref = pprofTop(files);
  const p = await openPage(context, html, "flame-demo.png");
  const { page } = p;

  /* hot_a's width is its share of the total */
  let r = await rects(page);
  const hotA = r.filter(q => q.name === "hot_a");
  check(hotA.length === 1, "one hot_a frame is drawn");
  if (hotA.length === 1 && ref.hot_a)
    check(Math.abs(hotA[0].share - ref.hot_a.cum) <= 0.5,
      `hot_a's width ${hotA[0].share.toFixed(2)}% is its share ${ref.hot_a.cum}% (go tool pprof) within 0.5 points`);
  else check(false, "go tool pprof lists hot_a");

  /* hover: the frame's details */
  {
    const box0 = await page.locator("#flame").boundingBox();
    await page.mouse.move(box0.x + hotA[0].x + hotA[0].w / 2, box0.y + hotA[0].y + hotA[0].h / 2);
    const tip = await page.textContent("#tip");
    check(/hot_a/.test(tip) && /module: emberprof_demo/.test(tip) && /file: .*demo\.c:\d+/.test(tip) &&
      tip.includes("total: ") && tip.includes("self: ") && tip.includes(ref.hot_a.cum.toFixed(2) + "%"),
      "hovering hot_a shows its module, file:line, self and total: " + tip);
  }
  /* icicle: the root goes from the bottom to the top */
  {
    const y0 = (await rects(page)).find(q => q.name === "all").y;
    await page.click("#icicle");
    const y1 = (await rects(page)).find(q => q.name === "all").y;
    check(y0 > 0 && y1 === 0, `the icicle toggle puts the root on top (y ${y0} -> ${y1})`);
    await page.click("#icicle");
  }

  /* search: exactly the matching frames highlighted, their share shown */
  await page.fill("#search", "^hot_");
  await page.press("#search", "Enter");
  r = await rects(page);
  const wrong = r.filter(q => q.highlighted !== /^hot_/.test(q.name));
  check(wrong.length === 0 && r.some(q => q.highlighted), "search ^hot_ highlights exactly the hot_ frames" + (wrong.length ? " (wrong: " + wrong.map(q => q.name).join(",") + ")" : ""));
  const matched = await page.textContent("#matched");
  const m = matched.match(/matched: ([\d.]+)%/);
  const want = (ref.hot_a ? ref.hot_a.cum : 0) + (ref.hot_b ? ref.hot_b.cum : 0);
  check(m && Math.abs(+m[1] - want) <= 0.5, `the matched share "${matched}" is hot_a + hot_b = ${want.toFixed(2)}% within 0.5 points`);
  await page.fill("#search", "");
  await page.press("#search", "Enter");

  /* clicking a frame zooms to it */
  r = await rects(page);
  const one = r.find(q => q.name === "stage_one");
  const box = await page.locator("#flame").boundingBox();
  await page.mouse.click(box.x + one.x + one.w / 2, box.y + one.y + one.h / 2);
  const zoomed = await page.evaluate(() => window.emberFlame.zoomed());
  r = await rects(page);
  const one2 = r.find(q => q.name === "stage_one");
  const W = await page.evaluate(() => window.emberFlame.canvasWidth());
  check(zoomed === "stage_one" && one2 && Math.abs(one2.w - W) < 1, "a click on stage_one zooms to it: it spans the width");
  check((await page.textContent("#crumbs")).includes("stage_one"), "the breadcrumb shows stage_one");
  await page.click("#reset");
  check(await page.evaluate(() => window.emberFlame.zoomed()) === "all", "reset zoom goes back to all");

  /* a label filter gives the filtered profile's total */
  const tags = pprofTags(files);
  const threads = Object.entries(tags.thread_id || {}).sort((a, b) => b[1] - a[1]);
  check(threads.length >= 2, "the profile has samples from several threads (thread_id)");
  if (threads.length) {
    const all = await page.evaluate(() => window.emberFlame.total);
    await page.selectOption("#filter-thread_id", threads[0][0]);
    const part = await page.evaluate(() => window.emberFlame.total);
    const share = 100 * part / all;
    check(Math.abs(share - threads[0][1]) <= 0.05 && part < all,
      `filtering thread_id=${threads[0][0]} leaves ${share.toFixed(2)}% of the total, go tool pprof -tags says ${threads[0][1]}%`);
    await page.selectOption("#filter-thread_id", "");
  }

  /* the sample type selector: the samples count gives its own shares */
  {
    const refS = pprofTop(files, ["-sample_index=samples"]);
    const opt = await page.$$eval("#type option", os => os.map(o => [o.value, o.textContent]));
    const samples = opt.find(o => o[1].startsWith("samples"));
    check(!!samples && opt.length === 2, "the type selector offers " + opt.map(o => o[1]).join(", "));
    if (samples) {
      await page.selectOption("#type", samples[0]);
      const a = (await rects(page)).find(q => q.name === "hot_a");
      check(a && refS.hot_a && Math.abs(a.share - refS.hot_a.cum) <= 0.5,
        `with type samples, hot_a's width ${a && a.share.toFixed(2)}% is go tool pprof -sample_index=samples' ${refS.hot_a && refS.hot_a.cum}%`);
      await page.selectOption("#type", opt[0][0]);
    }
  }

  /* the table: sortable, and a row opens the callers/callees view */
  await page.click("#table th[data-key=name]");
  const first = await page.textContent("#table tbody tr td");
  const names = await page.$$eval("#table tbody tr td:first-child", tds => tds.map(t => t.textContent));
  check(names.length > 3 && names.join("\n") === [...names].sort().join("\n"), "the table sorts by function name (first: " + first + ")");
  await page.click("#table tbody tr:has(td[title='hot_a'])");
  const callers = await rects(page, "callers");
  check(callers.some(q => q.name === "stage_one") && !callers.some(q => q.name === "stage_two"), "the callers of hot_a are stage_one and above, not stage_two");
  r = await rects(page);
  check(r.filter(q => q.highlighted).map(q => q.name).join() === "hot_a", "selecting hot_a in the table highlights it in the graph");
  await closePage(p);
}

/* The wall-clock page: thread_state filter against go tool pprof -tags. */
async function wallPage(context, files) {
  const html = path.join(work, "wall.html");
  execFileSync(EMBERPROF, ["flame", "--title", "demo wall", "-o", html, ...files], { stdio: "inherit" });
  const tags = pprofTags(files);
  const p = await openPage(context, html, "flame-wall.png");
  const states = Object.entries(tags.thread_state || {});
  check(states.length >= 2, "the wall profile has several thread states: " + states.map(x => x.join(" ")).join(", "));
  const running = states.find(x => x[0] === "running");
  if (running) {
    const all = await p.page.evaluate(() => window.emberFlame.total);
    await p.page.selectOption("#filter-thread_state", "running");
    const part = await p.page.evaluate(() => window.emberFlame.total);
    check(Math.abs(100 * part / all - running[1]) <= 0.05,
      `wall: thread_state=running leaves ${(100 * part / all).toFixed(2)}%, go tool pprof -tags says ${running[1]}%`);
  }
  await closePage(p);
}

async function diffPage(context, base, neu, name, expectShift) {
  const html = path.join(work, name + ".html");
  const out = execFileSync(EMBERPROF, ["diff", "--base", ...base, "--new", ...neu, "-o", html], { encoding: "utf8" });
  console.log(out.trim().split("\n").slice(0, 6).map(l => "      " + l).join("\n"));
  const p = await openPage(context, html, "flame-" + name + ".png");
  const rows = await p.page.$$eval("#table tbody tr", trs => trs.map(tr => Array.from(tr.children).map(td => td.textContent)));
  const row = n => rows.find(x => x[0] === n);
  if (expectShift) {
    const rb = pprofTop(base), rn = pprofTop(neu);
    for (const fn of ["hot_a", "hot_b"]) {
      const want = rn[fn].flat - rb[fn].flat, x = row(fn);
      check(x && Math.abs(parseFloat(x[3]) - want) <= 2 && x[5] === "significant",
        `${name}: ${fn} changed by ${x ? x[3] : "?"} points, go tool pprof says ${want.toFixed(2)}, marked ${x ? x[5] : "?"}`);
    }
    const r = await rects(p.page);
    const a = r.find(q => q.name === "hot_a"), b = r.find(q => q.name === "hot_b");
    const red = c => { const m = c.match(/rgb\((\d+),(\d+),(\d+)\)/); return m && +m[1] === 255 && +m[3] < 200; };
    const blue = c => { const m = c.match(/rgb\((\d+),(\d+),(\d+)\)/); return m && +m[3] === 255 && +m[1] < 200; };
    check(a && red(a.color), `${name}: hot_a (grew) is red: ${a && a.color}`);
    check(b && blue(b.color), `${name}: hot_b (shrank) is blue: ${b && b.color}`);
  } else {
    const sig = rows.filter(x => x[5] === "significant");
    check(sig.length === 0, `${name}: two runs of the same configuration: nothing significant (${sig.map(x => x[0] + " " + x[3]).join(", ") || "none"})`);
  }
  await closePage(p);
}

/* The first screen of a page whose stacks are taller than the window. */
async function deepPage(context) {
  const DEEP = process.env.EMBER_FLAME_DEEP;
  if (!DEEP) { check(false, "EMBER_FLAME_DEEP names the 60-frame program"); return; }
  const dir = path.join(work, "deep");
  execFileSync(EMBERPROF, ["run", "--rate", "250", "-q", "-o", dir, "--", DEEP, "1"], { stdio: ["ignore", "ignore", "inherit"] });
  const files = fs.readdirSync(dir).filter(f => f.endsWith(".pb.gz")).map(f => path.join(dir, f));
  const html = path.join(work, "deep.html");
  execFileSync(EMBERPROF, ["flame", "-o", html, ...files], { stdio: "inherit" });
  const p = await openPage(context, html, "flame-deep-full.png");
  const { page } = p;
  const vp = page.viewportSize();
  /* where the root is on the screen, and whether it is what is seen there */
  const rootOnScreen = async () => {
    const root = (await rects(page)).find(q => q.name === "all");
    const box = await page.locator("#flame").boundingBox();
    const y = box.y + root.y, cx = box.x + root.x + root.w / 2, cy = y + root.h / 2;
    const seen = await page.evaluate(([x, yy]) => { const e = document.elementFromPoint(x, yy); return e ? e.id : ""; }, [cx, cy]);
    return { y, h: root.h, seen, canvasHeight: box.height };
  };
  const r = await rects(page);
  const depth = r.filter(q => q.name === "deep_recurse").length;
  check(depth >= 60, `the stack is ${depth} deep_recurse frames deep (60 or more)`);
  let s = await rootOnScreen();
  check(s.canvasHeight > vp.height, `the graph (${s.canvasHeight} px) is taller than the window (${vp.height} px)`);
  check(s.y >= 0 && s.y + s.h <= vp.height && s.seen === "flame",
    `on opening, the root is on the first screen: y ${s.y.toFixed(0)}..${(s.y + s.h).toFixed(0)} of ${vp.height}, seen there: ${s.seen}`);
  await page.screenshot({ path: path.join(BINDIR, "flame-deep.png") });
  const W = await page.evaluate(() => window.emberFlame.canvasWidth());
  check(W >= 0.9 * vp.width, `the graph is ${W} px wide in a ${vp.width} px window (90% or more)`);
  const title = await page.title();
  check(title.includes("ember_flame_deep") && (await page.textContent("#title")).includes("ember_flame_deep"),
    `the title names the program: "${title}"`);
  await page.click("#icicle");
  s = await rootOnScreen();
  check(s.y >= 0 && s.y + s.h <= vp.height && s.seen === "flame",
    `icicle: the root is on the screen: y ${s.y.toFixed(0)} of ${vp.height}, seen there: ${s.seen}`);
  await closePage(p);
}

(async () => {
  const a1all = profileDemo("a1", [], ["--wall"]), a2 = profileDemo("a2", []), h = profileDemo("half", ["--split", "50"]);
  const a1 = cpuFiles(a1all);
  /* A fresh --user-data-dir: playwright passes it for a persistent context. */
  const context = await chromium.launchPersistentContext(fs.mkdtempSync(path.join(work, "profile-")), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  await context.route("**/*", route => {
    const url = route.request().url();
    if (url.startsWith("file://")) return route.continue();
    outsideAll.push(url);
    return route.abort();
  });
  try {
    await deepPage(context);
    await flamePage(context, a1);
    await wallPage(context, wallFiles(a1all));
    await diffPage(context, h, a1, "diff-shift", true);
    await diffPage(context, a2, a1, "diff-same", false);
  } finally {
    await context.close();
  }
  check(outsideAll.length === 0, "no request outside file:// was attempted (" + (outsideAll.join(", ") || "none") + ")");
  fs.rmSync(work, { recursive: true, force: true });
  console.log(failures ? failures + " check(s) failed" : "all checks passed");
  process.exit(failures ? 1 : 0);
})().catch(e => { console.error(e); process.exit(1); });
