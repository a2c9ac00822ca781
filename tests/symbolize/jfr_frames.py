#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""jfr_frames.py - the frames of JFR recordings as the JDK's `jfr print
--json` reads them (the peer we did not write), for the symbolize tests.

  jfr_frames.py named TRUTH ORIG.jfr NAMED.jfr
      ORIG is a recording with placeholder frames (method "0xOFFSET" in the
      module's class, its mapping in an emberprof.NativeMapping event),
      NAMED the same after `emberprof symbolize`. Every event of NAMED must
      be ORIG's (same order and type, every value but the stack equal),
      and every frame that was not a placeholder must be as it was. Each
      placeholder stands for the frames TRUTH (frames.py lines of a
      symbolizing run: "BUILDID+0xOFF<TAB>func file:line;...") has at its
      address; the frames NAMED has there are printed as
      "BUILDID+0xOFF<TAB>func:line;func:line" (sorted, unique), comparable
      with `jfr_frames.py truth`. A placeholder whose address TRUTH lacks
      ends the comparison of its stack (its frame count is unknown).
      Problems go to stderr, with exit status 1.

  jfr_frames.py truth TRUTH
      TRUTH's lines as "BUILDID+0xOFF<TAB>func:line;..." (files dropped:
      a JFR frame has a line number, no file).

  jfr_frames.py frames FILE...
      Every distinct frame of the jdk.ExecutionSample events, as
      "class<TAB>method<TAB>line<TAB>frame type".

  jfr_frames.py placeholders FILE...
      How many frames are placeholders ("0x..." methods), then how many
      are not.
"""
import json
import os
import re
import shutil
import subprocess
import sys

PH = re.compile(r"^0x[0-9a-f]+$")
FRAME = re.compile(r"^(.*) \S*:(\d+)(?:\(\S*\))?$")


def jfr_json(path):
    tool = os.environ.get("EMBER_JFR_TOOL") or shutil.which("jfr") or "/usr/bin/jfr"
    p = subprocess.run([tool, "print", "--json", "--stack-depth", "64", path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("jfr print %s failed: %s" % (path, p.stderr[-2000:]))
    return json.loads(p.stdout)["recording"]["events"]


def frame(f):
    m = f.get("method") or {}
    return ((m.get("type") or {}).get("name"), m.get("name"), f.get("lineNumber"), f.get("type"))


def frames_of(e):
    return [frame(f) for f in ((e["values"].get("stackTrace") or {}).get("frames") or [])]


def truth_of(path):
    out = {}
    with open(path) as fh:
        for line in fh:
            key, _, fr = line.rstrip("\n").partition("\t")
            if not fr or fr == "-":
                continue
            chain = []
            for part in fr.split(";"):
                # "func file:line", and "(mangled name)" when it differs
                m = FRAME.match(part)
                chain.append("%s:%s" % (m.group(1), m.group(2)) if m else "%s:0" % part)
            out[key] = chain
    return out


def cmd_named(truth_path, orig, named):
    truth = truth_of(truth_path)
    a, b = jfr_json(orig), jfr_json(named)
    bids = {}
    for e in a:
        if e["type"] == "emberprof.NativeMapping":
            bids[e["values"]["module"]] = e["values"]["buildId"]
    problems, got, unknown = [], set(), 0
    if len(a) != len(b):
        problems.append("%d events before, %d after" % (len(a), len(b)))
    for i, (x, y) in enumerate(zip(a, b)):
        if x["type"] != y["type"]:
            problems.append("event %d: %s became %s" % (i, x["type"], y["type"]))
            continue
        vx = {k: v for k, v in x["values"].items() if k != "stackTrace"}
        vy = {k: v for k, v in y["values"].items() if k != "stackTrace"}
        if vx != vy:
            problems.append("event %d (%s) changed beyond its stack" % (i, x["type"]))
        fx, fy, pos = frames_of(x), frames_of(y), 0
        for fr in fx:
            if not PH.match(fr[1] or ""):
                if pos >= len(fy) or fy[pos] != fr:
                    problems.append("event %d: frame %r is not as it was (%r)" %
                                    (i, fr, fy[pos] if pos < len(fy) else None))
                    break
                pos += 1
                continue
            key = "%s+0x%x" % (bids.get(fr[0], "?"), int(fr[1], 16))
            chain = truth.get(key)
            if chain is None:
                unknown += 1
                pos = None
                break
            named_chain = fy[pos:pos + len(chain)]
            got.add("%s\t%s" % (key, ";".join("%s:%s" % (n[1], n[2]) for n in named_chain)))
            pos += len(chain)
        if pos is not None and pos != len(fy):
            problems.append("event %d: %d frames after, %d expected" % (i, len(fy), pos))
    for line in sorted(got):
        print(line)
    print("jfr_frames: %d events, %d addresses named, %d stacks with an address a "
          "symbolizing run did not sample" % (len(a), len(got), unknown), file=sys.stderr)
    for p in problems[:10]:
        print("jfr_frames: " + p, file=sys.stderr)
    return 1 if problems else 0


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "named" and len(args) == 3:
        return cmd_named(*args)
    if mode == "truth" and len(args) == 1:
        for k, chain in sorted(truth_of(args[0]).items()):
            print("%s\t%s" % (k, ";".join(chain)))
        return 0
    if mode in ("frames", "placeholders"):
        seen, ph, other = set(), 0, 0
        for path in args:
            for e in jfr_json(path):
                if e["type"] != "jdk.ExecutionSample":
                    continue
                for fr in frames_of(e):
                    seen.add("\t".join(str(v) for v in fr))
                    if PH.match(fr[1] or ""):
                        ph += 1
                    else:
                        other += 1
        if mode == "placeholders":
            print(ph, other)
        else:
            for line in sorted(seen):
                print(line)
        return 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
