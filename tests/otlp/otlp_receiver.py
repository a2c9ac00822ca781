# SPDX-License-Identifier: Apache-2.0
"""otlp_receiver.py - a test OTLP/HTTP profiles receiver on 127.0.0.1.

Every request is decoded with Python modules that protoc generates, at
start-up, into a temporary directory from the official .proto files of the
pinned opentelemetry-proto release (--proto-dir, the root holding
opentelemetry/proto/...): not with emberprof's own decoder. Each request is
checked (content type, encoding, headers asked for with --expect-header,
no field unknown to the pinned protos, every dictionary index valid, every
dictionary table starting with its zero value and holding no entry twice,
one value per sample) and summarized as one JSON line in DIR/requests.jsonl:
resource and scope attributes, each Profile's samples per stack, and what
Grafana Pyroscope's ingester (pkg/ingester/otlp/convert.go and
ingest_handler.go) would store from it: service_name, __name__, the
profile type id, each sample's labels. A request that fails a check is
answered 400 with the reasons (and logged as such).

  --fail-first N   answer the first N requests 503 (a retryable outage)
  --port P         listen on P (0: any); the port is written to --port-file
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROTOS = [
    "opentelemetry/proto/common/v1/common.proto",
    "opentelemetry/proto/resource/v1/resource.proto",
    "opentelemetry/proto/profiles/v1development/profiles.proto",
    "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto",
]


def load_modules(proto_dir):
    out = tempfile.mkdtemp(prefix="otlp-pb2-")
    subprocess.run(["protoc", "-I", proto_dir, "--python_out", out] + PROTOS, check=True)
    sys.path.insert(0, out)
    from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2
    return profiles_service_pb2


def any_str(v):
    """Pyroscope's stringValueFromAnyValue: string or int, else ''."""
    if v is None:
        return ""
    k = v.WhichOneof("value")
    if k == "string_value":
        return v.string_value
    if k == "int_value":
        return str(v.int_value)
    if k == "array_value" and len(v.array_value.values) == 1:
        return any_str(v.array_value.values[0])
    return ""


def unknown_fields(msg, where, errs):
    try:
        if len(msg.UnknownFields()):
            errs.append("%s has fields unknown to the pinned protos" % where)
    except (AttributeError, NotImplementedError):
        pass
    for fd, val in msg.ListFields():
        if fd.type != fd.TYPE_MESSAGE:
            continue
        if fd.label == fd.LABEL_REPEATED:
            for i, m in enumerate(val):
                unknown_fields(m, "%s.%s[%d]" % (where, fd.name, i), errs)
        else:
            unknown_fields(val, "%s.%s" % (where, fd.name), errs)


def check_request(req):
    """Returns (errors, summary)."""
    errs = []
    unknown_fields(req, "request", errs)
    d = req.dictionary
    tables = {
        "mapping_table": d.mapping_table, "location_table": d.location_table,
        "function_table": d.function_table, "link_table": d.link_table,
        "attribute_table": d.attribute_table, "stack_table": d.stack_table,
    }
    for name, t in tables.items():
        if len(t) == 0 or t[0].ByteSize() != 0:
            errs.append("%s[0] is not the zero value" % name)
        seen = {}
        for i, e in enumerate(t):
            k = e.SerializeToString(deterministic=True)
            if k in seen:
                errs.append("%s[%d] repeats entry %d" % (name, i, seen[k]))
            seen[k] = i
    st = list(d.string_table)
    if not st or st[0] != "":
        errs.append("string_table[0] is not empty")
    if len(set(st)) != len(st):
        errs.append("string_table has duplicates")

    def idx(table, i, what):
        n = len(st) if table == "string_table" else len(tables[table])
        if i < 0 or i >= n:
            errs.append("%s: index %d out of %s (%d)" % (what, i, table, n))
            return False
        return True

    def s(i, what):
        return st[i] if idx("string_table", i, what) else ""

    for i, m in enumerate(d.mapping_table):
        s(m.filename_strindex, "mapping %d filename" % i)
        for a in m.attribute_indices:
            idx("attribute_table", a, "mapping %d attribute" % i)
    for i, f in enumerate(d.function_table):
        for x in (f.name_strindex, f.system_name_strindex, f.filename_strindex):
            s(x, "function %d" % i)
    for i, l in enumerate(d.location_table):
        idx("mapping_table", l.mapping_index, "location %d mapping" % i)
        for ln in l.lines:
            idx("function_table", ln.function_index, "location %d line" % i)
        for a in l.attribute_indices:
            idx("attribute_table", a, "location %d attribute" % i)
    for i, k in enumerate(d.stack_table):
        for x in k.location_indices:
            idx("location_table", x, "stack %d" % i)
    for i, a in enumerate(d.attribute_table):
        s(a.key_strindex, "attribute %d key" % i)
        s(a.unit_strindex, "attribute %d unit" % i)

    def attr(i):
        if not idx("attribute_table", i, "attribute"):
            return ("", "", "")
        a = d.attribute_table[i]
        v = a.value
        k = v.WhichOneof("value")
        val = v.string_value if k == "string_value" else v.int_value if k == "int_value" \
            else st[v.string_value_strindex] if k == "string_value_strindex" else None
        return (s(a.key_strindex, "attribute key"), val, s(a.unit_strindex, "attribute unit"))

    def frame(li):
        if not idx("location_table", li, "stack location"):
            return None
        l = d.location_table[li]
        m = d.mapping_table[l.mapping_index] if l.mapping_index < len(d.mapping_table) else None
        build_id = ""
        if m is not None:
            for a in m.attribute_indices:
                k, v, _ = attr(a)
                if k == "process.executable.build_id.gnu":
                    build_id = v
        lines = []
        for ln in l.lines:
            f = d.function_table[ln.function_index] if ln.function_index < len(d.function_table) else None
            if f is None:
                continue
            lines.append([st[f.name_strindex], st[f.system_name_strindex], st[f.filename_strindex],
                          f.start_line, ln.line])
        return [st[m.filename_strindex] if m is not None and l.mapping_index else "-", build_id,
                l.address, lines]

    summary = {"resources": [], "pyroscope": []}
    for rp in req.resource_profiles:
        res = {kv.key: (kv.value.string_value if kv.value.WhichOneof("value") == "string_value"
                        else kv.value.int_value) for kv in rp.resource.attributes}
        keys = [kv.key for kv in rp.resource.attributes]
        if len(keys) != len(set(keys)):
            errs.append("resource attributes repeat a key: %s" % keys)
        # Pyroscope: getServiceNameFromAttributes
        svc = "unknown_service"
        for kv in rp.resource.attributes:
            if kv.key == "service.name" and any_str(kv.value):
                svc = any_str(kv.value)
                break
            if kv.key == "process.executable.name" and any_str(kv.value):
                svc += ":" + any_str(kv.value)
        r = {"attributes": res, "scopes": []}
        for sp in rp.scope_profiles:
            sc = {"name": sp.scope.name, "version": sp.scope.version, "profiles": []}
            for pi, p in enumerate(sp.profiles):
                where = "profile %d" % pi
                if not p.HasField("sample_type"):
                    errs.append(where + ": no sample_type")
                stype = [s(p.sample_type.type_strindex, where), s(p.sample_type.unit_strindex, where)]
                ptype = [s(p.period_type.type_strindex, where), s(p.period_type.unit_strindex, where)]
                if len(p.profile_id) not in (0, 16) or p.profile_id == bytes(16):
                    errs.append(where + ": bad profile_id")
                samples = {}
                labels = []
                for si, smp in enumerate(p.samples):
                    if len(smp.values) != 1:
                        errs.append("%s sample %d has %d values" % (where, si, len(smp.values)))
                    if not idx("stack_table", smp.stack_index, "sample stack"):
                        continue
                    if smp.link_index:
                        idx("link_table", smp.link_index, "sample link")
                    frames = [frame(x) for x in d.stack_table[smp.stack_index].location_indices]
                    at = sorted([list(map(str, attr(a))) for a in smp.attribute_indices])
                    key = json.dumps([frames, at])
                    samples[key] = samples.get(key, 0) + (smp.values[0] if smp.values else 0)
                    # convertSampleAttributesToLabelsBack: string/int values, not service.name
                    labels.append(sorted("%s=%s" % (a[0], a[1]) for a in at
                                         if a[0] != "service.name" and a[1] not in ("", "None")))
                sc["profiles"].append({"sample_type": stype, "period_type": ptype,
                                       "period": p.period, "time": p.time_unix_nano,
                                       "duration": p.duration_nano, "samples": samples})
                # newProfileBuilder: the profile type and its name
                pt = ["", ""] if not (p.HasField("period_type") and p.period) else ptype
                ptid = "%s:%s:%s:%s" % (stype[0], stype[1], pt[0], pt[1])
                scale = 1
                if ptid == "samples:count:cpu:nanoseconds":
                    stored, name, scale = "cpu:nanoseconds", "process_cpu", p.period
                elif ptid == "off_cpu:nanoseconds::":
                    stored, name = "off_cpu:nanoseconds", "off_cpu"
                else:
                    parts = ptid.split(":")
                    stored, name = "%s:%s" % (stype[0], stype[1]), parts[2]
                # stored pprof keeps the period type (convertValueTypeBack)
                stored_id = "%s:%s:%s:%s" % (name, stored, ptype[0], ptype[1])
                summary["pyroscope"].append({
                    "service_name": svc, "__name__": name, "profile_type": stored_id,
                    "time": p.time_unix_nano, "scale": scale, "pid": res.get("process.pid"),
                    "series_labels": sorted("%s=%s" % (kv.key, any_str(kv.value))
                                            for kv in rp.resource.attributes
                                            if any_str(kv.value) and kv.key != "service.name"),
                    "sample_labels": sorted(set(json.dumps(x) for x in labels)),
                })
            r["scopes"].append(sc)
        summary["resources"].append(r)
    return errs, summary


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        srv = self.server
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        with srv.lock:
            srv.seen += 1
            fail = srv.seen <= srv.args.fail_first
        if fail:
            return self.reply(503, b"outage")
        errs = []
        if self.path != srv.args.path:
            errs.append("path %s, expected %s" % (self.path, srv.args.path))
        if self.headers.get("Content-Type") != "application/x-protobuf":
            errs.append("Content-Type %s" % self.headers.get("Content-Type"))
        enc = self.headers.get("Content-Encoding")
        if srv.args.expect_gzip and enc != "gzip":
            errs.append("not gzip'd (Content-Encoding %s)" % enc)
        if not srv.args.expect_gzip and enc:
            errs.append("Content-Encoding %s without compression asked" % enc)
        for h in srv.args.absent_header:
            if self.headers.get(h) is not None:
                errs.append("header %s sent, expected none" % h)
        for h in srv.args.expect_header:
            k, v = h.split("=", 1)
            if self.headers.get(k) != v:
                errs.append("header %s: %r, expected %r" % (k, self.headers.get(k), v))
        summary = {}
        try:
            raw = gzip.decompress(body) if enc == "gzip" else body
            req = srv.pb.ExportProfilesServiceRequest()
            req.ParseFromString(raw)
            e, summary = check_request(req)
            errs += e
        except Exception as ex:  # a request the official descriptors cannot parse
            errs.append("undecodable: %r" % ex)
        line = {"n": srv.seen, "errors": errs, "len": len(body), "encoding": enc,
                "headers": {k.lower(): v for k, v in self.headers.items()}}
        line.update(summary)
        with srv.lock:
            with open(os.path.join(srv.args.dir, "requests.jsonl"), "a") as f:
                f.write(json.dumps(line) + "\n")
        if errs:
            return self.reply(400, "; ".join(errs).encode())
        resp = srv.pb.ExportProfilesServiceResponse().SerializeToString()
        self.reply(200, resp, "application/x-protobuf")

    def reply(self, code, body, ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--path", default="/v1development/profiles")
    ap.add_argument("--expect-header", action="append", default=[])
    ap.add_argument("--absent-header", action="append", default=[])
    ap.add_argument("--expect-gzip", action="store_true")
    ap.add_argument("--fail-first", type=int, default=0)
    ap.add_argument("--lifetime", type=float, default=300)
    ap.add_argument("--check-file", action="append", default=[],
                    help="check request bodies in files (raw or gzip'd), print, exit")
    args = ap.parse_args()
    if args.check_file:
        pb = load_modules(args.proto_dir)
        bad = 0
        for path in args.check_file:
            body = open(path, "rb").read()
            req = pb.ExportProfilesServiceRequest()
            req.ParseFromString(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)
            errs, summary = check_request(req)
            n = sum(len(sc["profiles"]) for r in summary["resources"] for sc in r["scopes"])
            print("%s: %d profiles, %s" % (path, n, "; ".join(errs) if errs else "ok"))
            bad += bool(errs) or n == 0
        sys.exit(1 if bad else 0)
    os.makedirs(args.dir, exist_ok=True)
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.pb = load_modules(args.proto_dir)
    srv.args = args
    srv.lock = threading.Lock()
    srv.seen = 0
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.rename(args.port_file + ".tmp", args.port_file)
    threading.Timer(args.lifetime, srv.shutdown).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
