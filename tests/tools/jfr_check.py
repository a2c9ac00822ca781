#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""jfr_check.py - checks a JFR file with the JDK's own `jfr` tool.

usage: jfr_check.py FILE.jfr EXPECT.json

Runs `jfr summary FILE` and `jfr print --json FILE` (the JDK's reader: the
peer we did not write) and compares what they say with EXPECT, a JSON
object whose keys are all optional:

  "counts":  {"event.Type": n, ...}  events per type, checked in both the
             summary table and the printed events (types not named must
             have no events)
  "events":  [ {...}, ... ]  every event, in the order `jfr print` gives
             them (by end time: start + duration), each with
             "type", "time_ns" (exact), "tid", "thread" (osName),
             "state", "frames": [[class, method, frame type, line], ...]
             (leaf first) and, where given, "samples", "size", "address",
             "truncated", "duration_ns" (exact), "pollId", "open"
  "window":  [start_ns, end_ns]  every event's time lies in [start, end]
  "tids":    [tid, ...]  every event's thread is one of these
  "methods": {"event.Type": ["name", ...]}  each name is the method of
             some frame of some event of that type
  "frame_types": ["Native", ...]  every frame's type is one of these
  "settings": {"name": "value", ...}  the recording's jdk.ActiveSetting
             events hold these (async-profiler's converter reads them)
  "mappings": [{"module", "path", "buildId", "start", "end", "offset"}, ...]
             the emberprof.NativeMapping events (the mappings of frames
             without a name, for `emberprof symbolize`), all of them, in order

The recording's own events, jdk.ActiveRecording (exactly one),
jdk.ActiveSetting and emberprof.NativeMapping, are checked apart: they are not in "counts" or
"events", and the other keys do not apply to them.

Prints what it found; exits 0 when everything matches, 1 on a mismatch,
2 when `jfr` is missing or fails.
"""
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone


def die(code, msg):
    print("jfr_check: " + msg, file=sys.stderr)
    sys.exit(code)


def jfr_tool():
    path = os.environ.get("EMBER_JFR_TOOL") or shutil.which("jfr") or "/usr/bin/jfr"
    if not os.access(path, os.X_OK):
        die(2, "the JDK's `jfr` tool is missing (install openjdk-17-jdk-headless: "
               "scripts/setup-deps.sh)")
    return path


def run(args):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0 or "rror" in p.stderr:
        die(2, "%s failed (%d): %s%s" % (" ".join(args), p.returncode, p.stderr, p.stdout[-2000:]))
    return p.stdout


def epoch_ns(s):
    """'2026-11-30T15:17:57.123456789Z' or with an offset -> ns since the epoch."""
    frac = 0
    main = s
    tz = ""
    for i in range(len(s) - 1, 9, -1):
        if s[i] in "Z+-":
            main, tz = s[:i], s[i:]
            break
    if "." in main:
        main, f = main.split(".")
        frac = int((f + "000000000")[:9])
    dt = datetime.fromisoformat(main + (tz.replace("Z", "+00:00") if tz else "+00:00"))
    return int(dt.astimezone(timezone.utc).timestamp()) * 1000000000 + frac


def duration_ns(s):
    """'PT0.15025S', 'PT1M2.5S', 'PT1H' (the JDK's java.time.Duration) -> ns."""
    if s is None:
        return None
    if not isinstance(s, str) or not s.startswith("PT"):
        die(1, "unexpected duration %r" % (s,))
    ns, num = 0, ""
    for ch in s[2:]:
        if ch.isdigit() or ch in ".-":
            num += ch
            continue
        whole, _, frac = num.partition(".")
        sign = -1 if whole.startswith("-") else 1
        v = abs(int(whole or "0")) * 1000000000 + int((frac + "000000000")[:9])
        ns += sign * v * {"H": 3600, "M": 60, "S": 1}[ch]
        num = ""
    return ns


def summary_counts(text):
    counts = {}
    in_table = False
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "Event" and parts[1] == "Type":
            in_table = True
            continue
        if in_table and len(parts) >= 3 and parts[1].isdigit():
            if parts[0] not in ("jdk.Metadata", "jdk.CheckPoint"):  # not events: the chunk's own
                counts[parts[0]] = int(parts[1])
    if not in_table:
        die(1, "no event table in `jfr summary`:\n" + text)
    return counts


def frame_of(f):
    m = f.get("method") or {}
    cls = (m.get("type") or {}).get("name")
    ftype = f.get("type")
    if isinstance(ftype, dict):
        ftype = ftype.get("description")
    return [cls, m.get("name"), ftype, f.get("lineNumber")]


def state_of(v):
    st = v.get("state")
    return st.get("name") if isinstance(st, dict) else st


def main():
    if len(sys.argv) != 3:
        die(2, "usage: jfr_check.py FILE.jfr EXPECT.json")
    path, expect_path = sys.argv[1], sys.argv[2]
    with open(expect_path) as f:
        expect = json.load(f)
    tool = jfr_tool()
    summary = run([tool, "summary", path])
    printed = json.loads(run([tool, "print", "--json", path]))
    failures = []
    own = ("jdk.ActiveRecording", "jdk.ActiveSetting", "emberprof.NativeMapping")
    settings = {}
    nrec = 0
    for e in printed["recording"]["events"]:
        if e["type"] == "jdk.ActiveSetting":
            settings[e["values"].get("name")] = e["values"].get("value")
        nrec += e["type"] == "jdk.ActiveRecording"
    if nrec != 1:
        failures.append("%d jdk.ActiveRecording events, expected 1" % nrec)
    for k, want in expect.get("settings", {}).items():
        if settings.get(k) != want:
            failures.append("setting %s is %r, expected %r" % (k, settings.get(k), want))
    events = [e for e in printed["recording"]["events"] if e["type"] not in own]
    if "mappings" in expect:
        keys = ("module", "path", "buildId", "start", "end", "offset")
        maps = [{k: e["values"].get(k) for k in keys}
                for e in printed["recording"]["events"] if e["type"] == "emberprof.NativeMapping"]
        if maps != expect["mappings"]:
            failures.append("emberprof.NativeMapping events are %r, expected %r" % (maps, expect["mappings"]))

    got = {k: v for k, v in summary_counts(summary).items() if k not in own}
    by_type = {}
    for e in events:
        by_type[e["type"]] = by_type.get(e["type"], 0) + 1
    print("jfr summary: %s; jfr print: %d events %s" % (
        {k: v for k, v in got.items() if v}, len(events), by_type))
    if "counts" in expect:
        want = expect["counts"]
        for t in set(want) | set(k for k, v in got.items() if v) | set(by_type):
            if got.get(t, 0) != want.get(t, 0):
                failures.append("summary: %s has %d events, expected %d" % (t, got.get(t, 0), want.get(t, 0)))
            if by_type.get(t, 0) != want.get(t, 0):
                failures.append("print: %s has %d events, expected %d" % (t, by_type.get(t, 0), want.get(t, 0)))

    seen_methods = {}
    for i, e in enumerate(events):
        v = e["values"]
        thread = v.get("sampledThread") or v.get("eventThread") or {}
        t_ns = epoch_ns(v["startTime"])
        frames = [frame_of(f) for f in ((v.get("stackTrace") or {}).get("frames") or [])]
        for fr in frames:
            seen_methods.setdefault(e["type"], set()).add(fr[1])
        if "window" in expect:
            lo, hi = expect["window"]
            if not lo <= t_ns <= hi:
                failures.append("event %d (%s) at %d outside the window [%d, %d]" % (i, e["type"], t_ns, lo, hi))
        if "tids" in expect and thread.get("osThreadId") not in expect["tids"]:
            failures.append("event %d (%s): thread %s is not one of the program's" % (i, e["type"], thread))
        if "frame_types" in expect:
            for fr in frames:
                if fr[2] not in expect["frame_types"]:
                    failures.append("event %d: frame %s has type %s" % (i, fr, fr[2]))
                    break
        if "events" in expect:
            if i >= len(expect["events"]):
                continue
            x = expect["events"][i]
            got_e = {
                "type": e["type"], "time_ns": t_ns, "tid": thread.get("osThreadId"),
                "thread": thread.get("osName"), "state": state_of(v), "frames": frames,
                "truncated": (v.get("stackTrace") or {}).get("truncated"),
                "samples": v.get("samples"), "size": v.get("size"), "address": v.get("address"),
                "duration_ns": duration_ns(v.get("duration")), "pollId": v.get("pollId"),
                "open": v.get("open"),
            }
            for k, want in x.items():
                if got_e.get(k) != want:
                    failures.append("event %d: %s is %r, expected %r" % (i, k, got_e.get(k), want))
    if "events" in expect and len(events) != len(expect["events"]):
        failures.append("%d events printed, expected %d" % (len(events), len(expect["events"])))
    for t, names in expect.get("methods", {}).items():
        for n in names:
            if n not in seen_methods.get(t, set()):
                failures.append("no %s event has a frame in %s" % (t, n))

    for f in failures[:40]:
        print("MISMATCH: " + f, file=sys.stderr)
    if failures:
        die(1, "%d mismatches in %s" % (len(failures), path))
    print("jfr_check: %s matches" % path)


if __name__ == "__main__":
    main()
