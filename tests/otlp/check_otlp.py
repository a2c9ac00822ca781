# SPDX-License-Identifier: Apache-2.0
"""check_otlp.py - compares what the test receiver (otlp_receiver.py) got
with the local pprof files of the same run.

  check_otlp.py --requests DIR/requests.jsonl --local OUTDIR --app NAME
                [--attr key=value]... [--ordered-only]

Checks: no request failed the receiver's checks; each request holds one
window (one time) of one process; per process, windows arrive once each,
in order; every local window with samples arrived; each local pprof's
samples equal the OTLP Profiles of the same window and sample type, per
stack, value for value; resource attributes (service.name, process.*,
host.*, os.type, the --attr ones) and scope; what Pyroscope would store
(service_name, __name__, profile type ids, sample labels) against what
our pprof push stores, with the differences docs/design/otlp.md lists.
The pprof files are decoded here with a small wire-format reader.
"""
import argparse
import glob
import gzip
import json
import os
import platform
import re
import socket
import sys

fails = 0


def ok(msg):
    print("ok   " + msg)


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jfrconv"))
from stacks import fields, packed  # noqa: E402  (the wire-format walk the JFR tests use)


def s64(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def read_pprof(path):
    b = gzip.decompress(open(path, "rb").read())
    p = {"st": [], "types": [], "samples": [], "map": {}, "loc": {}, "fn": {}, "time": 0,
         "period": 0, "ptype": None}
    for num, wire, v in fields(b):
        if num == 1:
            p["types"].append({n: x for n, _, x in fields(v)})
        elif num == 2:
            smp = {"locs": [], "values": [], "labels": []}
            for n, w, x in fields(v):
                if n == 1:
                    smp["locs"] += packed(w, x)
                elif n == 2:
                    smp["values"] += [s64(y) for y in packed(w, x)]
                elif n == 3:
                    smp["labels"].append({a: y for a, _, y in fields(x)})
            p["samples"].append(smp)
        elif num == 3:
            m = {a: y for a, _, y in fields(v)}
            p["map"][m.get(1, 0)] = m
        elif num == 4:
            l = {"lines": []}
            for n, w, x in fields(v):
                if n == 4:
                    l["lines"].append({a: y for a, _, y in fields(x)})
                else:
                    l[n] = x
            p["loc"][l.get(1, 0)] = l
        elif num == 5:
            f = {a: y for a, _, y in fields(v)}
            p["fn"][f.get(1, 0)] = f
        elif num == 6:
            p["st"].append(v.decode())
        elif num == 9:
            p["time"] = s64(v)
        elif num == 11:
            p["ptype"] = {n: x for n, _, x in fields(v)}
        elif num == 12:
            p["period"] = s64(v)
    st = p["st"]
    S = lambda i: st[i] if i < len(st) else ""
    p["type_names"] = [[S(t.get(1, 0)), S(t.get(2, 0))] for t in p["types"]]
    p["ptype_names"] = [S(p["ptype"].get(1, 0)), S(p["ptype"].get(2, 0))] if p["ptype"] else ["", ""]
    per_type = [dict() for _ in p["types"]]
    labels = []
    for smp in p["samples"]:
        frames = []
        for lid in smp["locs"]:
            l = p["loc"][lid]
            m = p["map"].get(l.get(2, 0))
            lines = []
            for ln in l["lines"]:
                f = p["fn"][ln.get(1, 0)]
                lines.append([S(f.get(2, 0)), S(f.get(3, 0)), S(f.get(4, 0)), s64(f.get(5, 0)),
                              s64(ln.get(2, 0))])
            frames.append([S(m.get(5, 0)) if m else "-", S(m.get(6, 0)) if m else "",
                           l.get(3, 0), lines])
        at = []
        for lb in smp["labels"]:
            if lb.get(2):
                at.append([S(lb[1]), S(lb[2]), ""])
            else:
                at.append([S(lb.get(1, 0)), str(s64(lb.get(3, 0))), S(lb.get(4, 0))])
        at.sort()
        key = json.dumps([frames, at])
        for t, v in enumerate(smp["values"]):
            per_type[t][key] = per_type[t].get(key, 0) + v
        labels.append(sorted("%s=%s" % (a[0], a[1]) for a in at))
    p["per_type"] = per_type
    p["labels"] = sorted(set(json.dumps(x) for x in labels))
    return p


PUSH_NAME = {"cpu": "process_cpu", "wall": "wall", "memory": "memory"}


def same_files(a, b):
    """--same A B: the two pprof files hold the same profile, per stack."""
    pa, pb = read_pprof(a), read_pprof(b)
    for k in ("type_names", "ptype_names", "period", "time", "per_type", "labels"):
        if pa[k] != pb[k]:
            fail("%s and %s differ in %s" % (a, b, k))
            return
    ok("%s = %s: %d sample types, %d stacks" % (os.path.basename(a), os.path.basename(b),
                                                len(pa["type_names"]), len(pa["per_type"][0])))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--same":
        same_files(sys.argv[2], sys.argv[3])
        sys.exit(1 if fails else 0)
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", required=True)
    ap.add_argument("--local")
    ap.add_argument("--app")
    ap.add_argument("--attr", action="append", default=[])
    ap.add_argument("--ordered-only", action="store_true")
    ap.add_argument("--expect-windows", type=int, default=0)
    a = ap.parse_args()
    reqs = [json.loads(l) for l in open(a.requests)]
    bad = [r for r in reqs if r["errors"]]
    if bad:
        fail("%d of %d requests failed the receiver's checks: %s" % (len(bad), len(reqs),
                                                                    bad[0]["errors"][:5]))
    else:
        ok("%d requests decoded with the pinned protos, indices valid, no duplicates" % len(reqs))
    # windows: one time per request, per pid in order, once
    seen = {}
    for r in reqs:
        if r["errors"]:
            continue
        times = {p["time"] for res in r["resources"] for sc in res["scopes"] for p in sc["profiles"]}
        pid = r["resources"][0]["attributes"].get("process.pid")
        if len(times) != 1:
            fail("request %d holds %d windows" % (r["n"], len(times)))
            continue
        seen.setdefault(pid, []).append(times.pop())
    for pid, ts in seen.items():
        if ts == sorted(ts) and len(set(ts)) == len(ts):
            ok("process %s: %d windows, each once, in order" % (pid, len(ts)))
        else:
            fail("process %s: windows out of order or repeated: %s" % (pid, ts))
    if a.expect_windows:
        n = sum(len(t) for t in seen.values())
        (ok if n == a.expect_windows else fail)("%d windows delivered, %d expected" % (n, a.expect_windows))
    if a.ordered_only:
        sys.exit(1 if fails else 0)

    # local windows
    otlp = {}
    for r in reqs:
        if r["errors"]:
            continue
        for res in r["resources"]:
            for sc in res["scopes"]:
                for p in sc["profiles"]:
                    otlp[(res["attributes"].get("process.pid"), p["time"], tuple(p["sample_type"]),
                          tuple(p["period_type"]))] = (p, res, sc)
    stored = {}
    for r in reqs:
        for py in r.get("pyroscope", []):
            stored.setdefault((py["pid"], py["time"]), []).append(py)
    files = sorted(glob.glob(os.path.join(a.local, "*.pb.gz")))
    nwin = ncmp = 0
    for path in files:
        kind = "wall" if path.endswith(".wall.pb.gz") else "memory" if path.endswith(".memory.pb.gz") else "cpu"
        pid = int(re.search(r"-(\d+)-\d+(\.\w+)?\.pb\.gz$", path).group(1))
        p = read_pprof(path)
        if not any(p["per_type"][0].values()) and not any(any(t.values()) for t in p["per_type"]):
            continue  # an empty profile is not sent
        nwin += 1
        for t, tn in enumerate(p["type_names"]):
            got = otlp.get((pid, p["time"], tuple(tn), tuple(p["ptype_names"])))
            if not got:
                fail("%s: no OTLP profile %s for its window" % (os.path.basename(path), tn))
                continue
            op, res, sc = got
            if op["samples"] != p["per_type"][t]:
                diff = set(op["samples"].items()) ^ set(p["per_type"][t].items())
                fail("%s %s: samples differ (%d stacks), e.g. %.300s" % (os.path.basename(path), tn,
                                                                   len(diff), sorted(diff)[:1]))
            elif op["period"] != p["period"] or op["period_type"] != p["ptype_names"]:
                fail("%s: period differs" % path)
            else:
                ncmp += 1
            attrs = res["attributes"]
            want = {"service.name": a.app, "process.pid": pid, "os.type": "linux",
                    "host.name": socket.gethostname()}
            for kv in a.attr:
                k, v = kv.split("=", 1)
                want[k] = v
            for k, v in want.items():
                if attrs.get(k) != v:
                    fail("resource %s = %r, expected %r" % (k, attrs.get(k), v))
            exe = os.path.realpath("/proc/%d/exe" % pid) if os.path.exists("/proc/%d" % pid) else None
            if not attrs.get("process.executable.path") or \
                    os.path.basename(attrs["process.executable.path"]) != attrs.get("process.executable.name"):
                fail("process.executable.path/name: %r" % attrs)
            if attrs.get("host.arch") not in ("amd64", "arm64", platform.machine()):
                fail("host.arch %r" % attrs.get("host.arch"))
            if sc["name"] != "emberprof" or not sc["version"]:
                fail("scope %s %s" % (sc["name"], sc["version"]))
        # Pyroscope: what our push stores vs what the ingester stores from OTLP
        name = PUSH_NAME[kind]
        pt = p["ptype_names"]
        push = {"%s:%s:%s:%s:%s" % (name, tn[0], tn[1], pt[0], pt[1]) for tn in p["type_names"]}
        if kind == "cpu":  # docs/design/otlp.md: samples/count becomes cpu/ns named process_cpu
            expect = {"process_cpu:cpu:nanoseconds:cpu:nanoseconds", "cpu:cpu:nanoseconds:cpu:nanoseconds"}
        elif kind == "memory":  # named after the period type
            expect = {x.replace("memory:", "space:", 1) for x in push}
        else:
            expect = push
        got_py = [x for x in stored.get((pid, p["time"]), []) if x["profile_type"] in expect]
        got_ids = {x["profile_type"] for x in got_py}
        if got_ids != expect:
            fail("%s: Pyroscope would store %s, expected %s (push stores %s)" % (
                os.path.basename(path), sorted(got_ids), sorted(expect), sorted(push)))
        for x in got_py:
            if x["service_name"] != a.app:
                fail("Pyroscope service_name %r, push stores %r" % (x["service_name"], a.app))
            if x["sample_labels"] != p["labels"]:
                fail("%s: Pyroscope sample labels %s, push stores %s" % (
                    os.path.basename(path), x["sample_labels"][:3], p["labels"][:3]))
    (ok if nwin else fail)("%d local profiles with samples; %d sample types equal per stack" % (nwin, ncmp))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
