#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A fake Grafana Pyroscope server for emberprof's tests.

Written from the protocol description (shared/reference/pyroscope.md), not
from emberprof's client code, and using only Python's standard library.

Data port (127.0.0.1 only):
  POST <base>/push.v1.PusherService/Push   Connect unary, application/proto:
      push.v1.PushRequest{series: RawProfileSeries{labels: LabelPair{name,value},
      samples: RawSample{raw_profile, ID}}}, decoded by hand; raw_profile gunzipped.
  POST <base>/ingest?name=&from=&until=&format=pprof&sampleRate=&spyName=
  POST <base>/ingest?name=app{k=v,...}&from=&until=&format=jfr&...   a
      multipart/form-data body with a part named "jfr" (a JFR recording,
      gzip'd or not; optional part "labels"), as Pyroscope's Java agent sends
      it; stored as <dir>/NNNNNN.jfr, series labels from the name.
Each accepted profile is stored as <dir>/NNNNNN.pb (the uncompressed pprof)
with a JSON sidecar <dir>/NNNNNN.json (path, query, headers, series labels,
sample ID, time_nanos, sample labels). Label rules are those of the real
server: duplicate names and an empty or missing __name__ give a Connect
error 400 {"code":"invalid_argument","message":...}; too many labels or
too long names/values too. Optional auth: --expect-bearer, --expect-basic,
--expect-tenant (401 {"code":"unauthenticated"} on mismatch).

Control port (127.0.0.1 only), plain GETs answered with text:
  /mode?m=ok                                  normal service
  /mode?m=status&code=N[&retry_after=S][&count=K]
                                              answer N (K times, or until changed)
  /mode?m=hang                                accept, never answer
  /down, /up                                  close the data socket / listen again
                                              on the same port (a request being
                                              handled is answered before /down
                                              closes its connection)
  /count        "<accepted> <rejected> <requests>"
  /list         one line per accepted profile, arrival order:
                n endpoint time_nanos samples id received_at
  /requests     one line per request: n path status received_at
  /show?n=K     "key<TAB>value" lines about accepted profile K
  /quit         exit
Both ports go to --port-file as "<data> <control>". The server exits by
itself after --lifetime seconds. --self-test runs the server's own checks
against itself (the duplicate/empty/missing __name__ rules, the label
limit, content type, auth, /ingest names, malformed profiles) and exits 1
if any is not enforced.
"""
import argparse
import base64
import gzip
import json
import os
import re
import select
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_LABELS = 30
MAX_NAME = 1024
MAX_VALUE = 2048
# Grafana Pyroscope's default limits (pkg/validation/limits.go RegisterFlags,
# v1.21.1 and main): validation.max-profile-size-bytes,
# max-profile-stacktrace-samples, max-profile-stacktrace-sample-labels,
# max-profile-stacktrace-depth, reject-newer-than. reject-older-than (1h)
# is --reject-older-than here, so that tests need not wait an hour.
MAX_PROFILE_BYTES = 4 * 1024 * 1024
MAX_SAMPLES = 16000
MAX_SAMPLE_LABELS = 100
MAX_DEPTH = 1000
REJECT_NEWER_S = 600
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
APP_RE = re.compile(r"^[A-Za-z0-9_.\-/]+(\{[A-Za-z0-9_.]+=[^,{}=]*(,[A-Za-z0-9_.]+=[^,{}=]*)*\})?$")


class BadRequest(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


# ---- protobuf wire format, by hand ----

def read_varint(buf, i):
    shift = value = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise BadRequest(400, "invalid_argument", "truncated or overlong varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def fields(buf):
    """Yields (field number, wire type, value) of one message."""
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        num, wire = key >> 3, key & 7
        if num == 0:
            raise BadRequest(400, "invalid_argument", "field number 0")
        if wire == 0:
            v, i = read_varint(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = read_varint(buf, i)
            if i + n > len(buf):
                raise BadRequest(400, "invalid_argument", "length beyond the message")
            v, i = buf[i:i + n], i + n
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise BadRequest(400, "invalid_argument", "unsupported wire type %d" % wire)
        if i > len(buf):
            raise BadRequest(400, "invalid_argument", "truncated field")
        yield num, wire, v


def utf8(b, what):
    try:
        return bytes(b).decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest(400, "invalid_argument", "%s is not valid UTF-8" % what)


def decode_push(body):
    series = []
    for num, wire, v in fields(body):
        if num != 1 or wire != 2:
            continue
        labels, samples = [], []
        for n2, w2, v2 in fields(v):
            if n2 == 1 and w2 == 2:
                name = value = ""
                for n3, w3, v3 in fields(v2):
                    if n3 == 1 and w3 == 2:
                        name = utf8(v3, "a label name")
                    elif n3 == 2 and w3 == 2:
                        value = utf8(v3, "a label value")
                labels.append((name, value))
            elif n2 == 2 and w2 == 2:
                raw, sid = b"", ""
                for n3, w3, v3 in fields(v2):
                    if n3 == 1 and w3 == 2:
                        raw = bytes(v3)
                    elif n3 == 2 and w3 == 2:
                        sid = utf8(v3, "the sample ID")
                samples.append((raw, sid))
        series.append((labels, samples))
    return series


def parse_multipart(body, boundary):
    """{name: content} of a multipart/form-data body, strictly delimited."""
    delim = b"--" + boundary
    if not body.startswith(delim + b"\r\n"):
        raise BadRequest(400, "invalid_argument", "multipart body does not start with its boundary")
    end = body.find(b"\r\n" + delim + b"--")
    if end < 0:
        raise BadRequest(400, "invalid_argument", "multipart body has no closing boundary")
    out = {}
    for part in body[len(delim) + 2:end].split(b"\r\n" + delim + b"\r\n"):
        head, sep, content = part.partition(b"\r\n\r\n")
        if not sep:
            raise BadRequest(400, "invalid_argument", "multipart part without headers")
        m = re.search(rb'(?im)^content-disposition:\s*form-data;\s*name="([^"]*)"', head)
        if not m:
            raise BadRequest(400, "invalid_argument", "multipart part without a form-data name")
        out[m.group(1).decode()] = content
    return out


def legacy_label_name(name):
    """(ok, sanitized) as a 1.x server sees a label name.

    Follows pkg/validation/validate.go SanitizeLegacyLabelName (v1.21.1):
    letters, '_' and digits (not first) are kept, dots become '_', any
    other character (or an empty name) makes the name invalid.
    """
    if not name:
        return False, name
    for i, c in enumerate(name):
        if c.isascii() and (c.isalpha() or c == "_" or (c.isdigit() and i > 0)):
            continue
        if c == ".":
            continue
        return False, name
    return True, name.replace(".", "_")


def check_series_labels(labels, sanitize=True):
    """One series' labels as the server validates them; returns the labels
    it stores (sorted, dots sanitized) or raises 400.

    Follows pkg/validation/validate.go ValidateLabels (v1.21.1): at most
    MAX_LABELS names counting every label (series and sample labels merged,
    service_name included), a non-empty __name__ (IsValidMetricName), a
    service_name, name and value lengths, legacy names with dots rewritten
    (handleSanitizedLabel: a clash with another value is an error) unless
    label sanitization is off (the current server's default: any UTF-8
    name), and no duplicate names.
    """
    ls = sorted(labels)
    if not ls:
        raise BadRequest(400, "invalid_argument", "error at least one label pair is required per profile")
    if len(ls) > MAX_LABELS:
        raise BadRequest(400, "invalid_argument", "profile series '%s' has %d label names; limit %d"
                         % (ls, len(ls), MAX_LABELS))
    d = dict(ls)
    if not d.get("__name__"):
        raise BadRequest(400, "invalid_argument", "invalid labels '%s' with error: invalid metric name" % ls)
    if not d.get("service_name"):
        raise BadRequest(400, "invalid_argument", "invalid labels '%s' with error: service name is not provided" % ls)
    out = {}
    for n, v in ls:
        if len(n.encode()) > MAX_NAME:
            raise BadRequest(400, "invalid_argument", "label name too long: %r" % n)
        if len(v.encode()) > MAX_VALUE:
            raise BadRequest(400, "invalid_argument", "label value too long for %s" % n)
        name = n
        if sanitize:
            ok, name = legacy_label_name(n)
            if not ok:
                raise BadRequest(400, "invalid_argument", "invalid labels '%s' with error: invalid label name '%s'"
                                 % (ls, n))
        elif not n:
            raise BadRequest(400, "invalid_argument", "invalid label name ''")
        if name in out:
            if name != n and out[name] == v:
                continue  # the same label after sanitization: merged
            raise BadRequest(400, "invalid_argument", "profile with labels '%s' has duplicate label name: '%s'"
                             % (ls, name))
        out[name] = v
    return sorted(out.items())


def split_series(series_labels, prof):
    """The series a profile becomes on the 1.x ingester write path.

    Follows pkg/model/pprofsplit/pprof_split.go VisitSampleSeries and
    addSampleLabelsToLabelsBuilder: samples are grouped by their string
    labels, each group's series labels are the request's plus every sample
    label whose name is not among them yet. Returns a list of label lists.
    """
    names = {n for n, _ in series_labels}
    groups = []
    for key in sorted({tuple(sorted(s["labels"])) for s in prof["samples"]}) or [()]:
        extra = []
        for n, v in key:
            if n not in names and n not in [e for e, _ in extra] and v:
                extra.append((n, v))
        groups.append(list(series_labels) + extra)
    return groups


def check_emberprof_rules(labels, prof, main_binary):
    """Rules where the real server does not refuse but stores wrong data,
    or where Pyroscope's readers expect what its own agents send. The fake
    refuses (400, code failed_precondition) so that CI sees the mistake.
    """
    d = dict(labels)
    # pkg/phlaredb/head.go Head.Ingest: a series without __delta__="false"
    # is taken as cumulative; for memory (alloc_objects/alloc_space) the
    # 1.x ingester then computes deltas itself: the first profile of each
    # series is dropped and the previous one subtracted from the next.
    if d.get("__name__") == "memory" and d.get("__delta__") != "false":
        raise BadRequest(400, "failed_precondition", "memory profile without __delta__=\"false\": "
                         "a 1.x ingester would treat alloc_* as running totals")
    # pkg/phlaredb/head.go Head.Ingest drops a profile without samples (and
    # distributor.go pushSeries after Normalize): sending one is waste.
    if not prof["samples"]:
        raise BadRequest(400, "failed_precondition", "profile has no samples (the server drops it)")
    # pkg/validation/validate.go ValidateProfile cuts stacks deeper than
    # max-profile-stacktrace-depth to their root-most frames (the leaf side
    # is lost); Pyroscope's own agents cut at the root instead.
    deep = max((len(s["locs"]) for s in prof["samples"]), default=0)
    if deep > MAX_DEPTH:
        raise BadRequest(400, "failed_precondition", "a stack has %d frames; the server keeps %d and "
                         "would drop the leaf side" % (deep, MAX_DEPTH))
    # pkg/model/profile.go SymbolsPartitionForProfile and
    # pkg/distributor/distributor.go injectMappingVersions take mapping[0]
    # as the main binary.
    maps = prof["mappings"]
    if maps:
        first = maps[0]["file"]
        base = os.path.basename(first)
        if main_binary and first != main_binary:
            raise BadRequest(400, "failed_precondition", "mapping[0] is %r, not the main binary %r"
                             % (first, main_binary))
        if not main_binary and (first.startswith("[") or ".so" in base):
            raise BadRequest(400, "failed_precondition", "mapping[0] is %r, a library, not the main binary"
                             % first)
    # A caller address outside every mapping is not code (a data word the
    # unwinder took for a return address): emberprof never makes it a
    # location (the server would keep it as an unsymbolizable frame). A
    # leaf may lie in a library unloaded since it was sampled.
    by_id = {m["id"]: m for m in maps}
    callers = {i for s in prof["samples"] for i in s["locs"][1:]}
    for loc in prof["locations"]:
        m = by_id.get(loc["mapping"])
        if loc["id"] not in callers:
            continue
        if loc["address"] and (m is None or not m["start"] <= loc["address"] < m["limit"]):
            raise BadRequest(400, "failed_precondition", "location %d at 0x%x lies outside every mapping"
                             % (loc["id"], loc["address"]))
    # Grafana shows thread_name as is: a placeholder is no name.
    for s in prof["samples"]:
        for n, v in s["labels"]:
            if n == "thread_name" and v in ("", "?"):
                raise BadRequest(400, "failed_precondition", "thread_name %r" % v)


def check_time(t_ns, reject_older_s, now=None):
    """pkg/validation/validate.go ValidateProfile with ingestionWindow.valid:
    a profile stamped (time_nanos > 0) at or before now - reject-older-than,
    or at or after now + reject-newer-than, is refused with 400."""
    now = time.time() if now is None else now
    if t_ns <= 0:
        return
    t = t_ns / 1e9
    if (reject_older_s and t <= now - reject_older_s) or t >= now + REJECT_NEWER_S:
        raise BadRequest(400, "invalid_argument", "profile with labels '...' is outside of ingestion "
                         "window (profile timestamp: %s, the ingestion window starts at %s)"
                         % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)),
                            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - reject_older_s))))


def check_profile(prof, raw_len):
    """pkg/validation/validate.go ValidateProfile: size, sample count, sample
    labels per sample, ids that are not 0, one value per sample type."""
    if raw_len > MAX_PROFILE_BYTES:
        raise BadRequest(400, "invalid_argument", "the profile exceeds the size limit (%d > %d)"
                         % (raw_len, MAX_PROFILE_BYTES))
    if len(prof["samples"]) > MAX_SAMPLES:
        raise BadRequest(400, "invalid_argument", "the profile exceeds the samples count limit (%d)"
                         % len(prof["samples"]))
    for s in prof["samples"]:
        if len(s["labels"]) + s["num_labels"] > MAX_SAMPLE_LABELS:
            raise BadRequest(400, "invalid_argument", "the profile exceeds the sample labels limit")
        if len(s["values"]) != prof["ntypes"]:
            raise BadRequest(400, "invalid_argument", "sample value length mismatch")
    if any(loc["id"] == 0 for loc in prof["locations"]):
        raise BadRequest(400, "invalid_argument", "location id is 0")
    if any(f == 0 for f in prof["functions"]):
        raise BadRequest(400, "invalid_argument", "function id is 0")


def metric_name(prof):
    """pkg/og/convert/pprof/profile.go RawProfile.metricName, for /ingest."""
    types = prof["type_names"]
    if "wall" in types:
        return "wall"
    for st in types:
        if "cpu" in st:
            return "process_cpu"
        if "alloc_" in st or "inuse_" in st or st in ("space", "objects"):
            return "memory"
    return types[-1] if types else ""


def parse_name(name):
    """pkg/og/storage/segment labelset parsing of /ingest's name=app{k=v,...}."""
    app, _, rest = name.partition("{")
    labels = []
    for kv in rest.rstrip("}").split(",") if rest else []:
        k, _, v = kv.partition("=")
        labels.append((k, v))
    return app, labels


def ints(wire, v):
    """A repeated integer field: packed (wire 2) or one varint."""
    if wire == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = read_varint(v, i)
        out.append(x)
    return out


def parse_pprof(raw):
    """profile.proto, decoded by hand; returns (raw, facts). facts["prof"]
    holds what the checks need (removed before the sidecar is written)."""
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except OSError as e:
            raise BadRequest(400, "invalid_argument", "raw_profile: bad gzip: %s" % e)
    strings, sample_types, samples, mappings, locations, functions = [], [], [], [], [], []
    time_nanos = duration = 0
    for num, wire, v in fields(raw):
        if num == 1 and wire == 2:
            st = {}
            for n2, w2, v2 in fields(v):
                if w2 == 0:
                    st[n2] = v2
            sample_types.append(st)
        elif num == 2 and wire == 2:
            samples.append(v)
        elif num == 3 and wire == 2:
            m = {"id": 0, "start": 0, "limit": 0, "file": 0}
            for n2, w2, v2 in fields(v):
                if w2 == 0:
                    key = {1: "id", 2: "start", 3: "limit", 5: "file"}.get(n2)
                    if key:
                        m[key] = v2
            mappings.append(m)
        elif num == 4 and wire == 2:
            loc = {"id": 0, "mapping": 0, "address": 0}
            for n2, w2, v2 in fields(v):
                if w2 == 0:
                    key = {1: "id", 2: "mapping", 3: "address"}.get(n2)
                    if key:
                        loc[key] = v2
            locations.append(loc)
        elif num == 5 and wire == 2:
            fid = 0
            for n2, w2, v2 in fields(v):
                if n2 == 1 and w2 == 0:
                    fid = v2
            functions.append(fid)
        elif num == 6 and wire == 2:
            strings.append(utf8(v, "a profile string"))
        elif num == 9 and wire == 0:
            time_nanos = v
        elif num == 10 and wire == 0:
            duration = v
    if not sample_types:
        raise BadRequest(400, "invalid_argument", "profile has no sample_type")
    if not strings or strings[0] != "":
        raise BadRequest(400, "invalid_argument", "string_table must start with \"\"")
    for st in sample_types:
        for k in (1, 2):
            idx = st.get(k, 0)
            if idx >= len(strings):
                raise BadRequest(400, "invalid_argument", "sample_type string out of range")
            if "-" in strings[idx]:
                raise BadRequest(400, "invalid_argument", "sample type contains '-'")
    for m in mappings:
        if m["file"] >= len(strings):
            raise BadRequest(400, "invalid_argument", "mapping filename out of range")
        m["file"] = strings[m["file"]]
    sample_labels = {}
    parsed = []
    for s in samples:
        smp = {"locs": [], "values": [], "labels": [], "num_labels": 0}
        for n2, w2, v2 in fields(s):
            if n2 == 1:
                smp["locs"] += ints(w2, v2)
            elif n2 == 2:
                smp["values"] += ints(w2, v2)
            elif n2 == 3 and w2 == 2:
                key = strv = 0
                for n3, w3, v3 in fields(v2):
                    if n3 == 1 and w3 == 0:
                        key = v3
                    elif n3 == 2 and w3 == 0:
                        strv = v3
                if key >= len(strings) or strv >= len(strings):
                    raise BadRequest(400, "invalid_argument", "label string out of range")
                if strv:
                    sample_labels.setdefault(strings[key], set()).add(strings[strv])
                    smp["labels"].append((strings[key], strings[strv]))
                else:
                    smp["num_labels"] += 1
        parsed.append(smp)
    prof = {"samples": parsed, "mappings": mappings, "locations": locations,
            "functions": functions, "ntypes": len(sample_types),
            "type_names": [strings[st.get(1, 0)] for st in sample_types]}
    return raw, {
        "time_nanos": time_nanos,
        "duration_nanos": duration,
        "samples": len(samples),
        "sample_labels": {k: sorted(v) for k, v in sample_labels.items()},
        "mapping0": mappings[0]["file"] if mappings else "",
        "max_depth": max((len(x["locs"]) for x in parsed), default=0),
        "prof": prof,
    }


# ---- server state ----

class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.mode = "ok"
        self.status = 200
        self.retry_after = None
        self.count = -1
        self.accepted = []     # dicts (sidecars)
        self.requests = []     # (n, path, status, time)
        self.rejected = 0
        self.release = threading.Event()  # set: hung requests give up
        self.inflight = 0      # requests being read, stored or answered
        self.data = None

    def next_status(self):
        """The injected failure for this request, or None."""
        with self.lock:
            if self.mode != "status":
                return None
            if self.count == 0:
                self.mode = "ok"
                return None
            if self.count > 0:
                self.count -= 1
            return self.status, self.retry_after


STATE = None


class DataHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-pyroscope/1"

    def log_message(self, fmt, *a):
        pass

    def handle_one_request(self):
        # Wait for a request; in hang mode never read it, never answer.
        try:
            r, _, _ = select.select([self.connection], [], [], 1.0)
        except (OSError, ValueError):
            self.close_connection = True
            return
        if not r:
            if STATE.release.is_set():
                self.close_connection = True
            return
        with STATE.lock:
            hang = STATE.mode == "hang"
        if hang:
            while not STATE.release.wait(0.2):
                with STATE.lock:
                    if STATE.data is None or STATE.data.generation != self.generation:
                        break
            self.close_connection = True
            return
        with STATE.lock:
            STATE.inflight += 1
        try:
            super().handle_one_request()
        finally:
            with STATE.lock:
                STATE.inflight -= 1

    def reply(self, status, body=b"", ctype="application/json", extra=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def error_json(self, status, code, message, extra=None):
        self.reply(status, json.dumps({"code": code, "message": message}).encode(), extra=extra)

    def do_GET(self):
        self.record(405)
        self.error_json(405, "unimplemented", "use POST")

    def record(self, status):
        with STATE.lock:
            STATE.requests.append((len(STATE.requests), self.path, status, time.time()))
            if status != 200:
                STATE.rejected += 1

    def check_auth(self):
        a = STATE.args
        auth = self.headers.get("Authorization", "")
        if a.expect_bearer and auth != "Bearer " + a.expect_bearer:
            raise BadRequest(401, "unauthenticated", "bad or missing bearer token")
        if a.expect_basic:
            want = "Basic " + base64.b64encode(a.expect_basic.encode()).decode()
            if auth != want:
                raise BadRequest(401, "unauthenticated", "bad or missing basic auth")
        if a.expect_tenant and self.headers.get("X-Scope-OrgID") != a.expect_tenant:
            raise BadRequest(401, "unauthenticated", "no org id")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0") or 0)
        body = self.rfile.read(length) if length else b""
        injected = STATE.next_status()
        if injected:
            status, retry_after = injected
            extra = {"Retry-After": str(retry_after)} if retry_after is not None else None
            self.record(status)
            if status == 429:
                self.error_json(429, "resource_exhausted", "rate limited (injected)", extra)
            elif status >= 500:
                self.reply(status, b"internal error (injected)\n", "text/plain", extra)
            else:
                self.error_json(status, "invalid_argument", "request refused (injected)", extra)
            return
        url = urllib.parse.urlsplit(self.path)
        try:
            self.check_auth()
            if self.headers.get("Content-Encoding", "") == "gzip":
                body = gzip.decompress(body)
            if url.path.endswith("/push.v1.PusherService/Push"):
                recs = self.push(body)
            elif url.path.endswith("/ingest"):
                recs = [self.ingest(url, body)]
            else:
                raise BadRequest(404, "not_found", "no route for " + url.path)
        except BadRequest as e:
            self.record(e.status)
            self.error_json(e.status, e.code, e.message)
            return
        for r in recs:
            self.store(*r)
        self.record(200)
        self.reply(200, b"", "application/proto" if url.path.endswith("Push") else "text/plain")

    def base_record(self, endpoint):
        url = urllib.parse.urlsplit(self.path)
        return {
            "endpoint": endpoint,
            "path": url.path,
            "query": dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True)),
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "received_at": time.time(),
        }

    def admit(self, series_labels, prof, raw_len, t_ns):
        """Every check of the 1.x write path for one profile; returns the
        stored series (label lists). The order is the distributor's:
        pushSeries adds service_name, ValidateProfile, then the series
        split and ValidateLabels per series."""
        a = STATE.args
        if not dict(series_labels).get("service_name"):
            # pkg/distributor/distributor.go pushSeries: the fallback name
            series_labels = list(series_labels) + [("service_name", "unknown_service")]
        check_time(t_ns, a.reject_older_than)
        check_profile(prof, raw_len)
        series = [check_series_labels(ls, not a.no_label_sanitization)
                  for ls in split_series(series_labels, prof)]
        for ls in series:
            check_emberprof_rules(ls, prof, a.main_binary)
        return series

    def push(self, body):
        ctype = self.headers.get("Content-Type", "")
        if ctype != "application/proto":
            raise BadRequest(415, "invalid_argument", "unsupported content type %r" % ctype)
        out = []
        series = decode_push(body)
        if not series:
            raise BadRequest(400, "invalid_argument", "no series")
        for labels, samples in series:
            names = [n for n, _ in labels]
            if len(names) != len(set(names)):
                raise BadRequest(400, "invalid_argument", "duplicate label name in %s" % names)
            if not samples:
                raise BadRequest(400, "invalid_argument", "series without samples")
            for raw, sid in samples:
                pprof, facts = parse_pprof(raw)
                prof = facts.pop("prof")
                stored = self.admit(labels, prof, len(pprof), facts["time_nanos"])
                rec = self.base_record("push")
                rec.update(facts)
                rec["labels"] = labels
                rec["series"] = stored
                rec["id"] = sid
                rec["id_is_uuid4"] = bool(UUID_RE.match(sid)) and sid[14] == "4" and sid[19] in "89ab"
                out.append((pprof, rec))
        return out

    def ingest(self, url, body):
        q = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        name = q.get("name", "")
        if not APP_RE.match(name):
            raise BadRequest(400, "invalid_argument", "bad application name %r" % name)
        for k in ("from", "until", "sampleRate"):
            if k in q and not q[k].isdigit():
                raise BadRequest(400, "invalid_argument", "%s must be a number" % k)
        if q.get("format") == "jfr":
            return self.ingest_jfr(q, name, body)
        if q.get("format") != "pprof":
            raise BadRequest(400, "invalid_argument", "this fake server takes format=pprof or jfr")
        ctype = self.headers.get("Content-Type", "")
        if ctype.startswith("multipart/"):
            raise BadRequest(400, "invalid_argument", "multipart not supported here")
        pprof, facts = parse_pprof(body)
        prof = facts.pop("prof")
        app, name_labels = parse_name(name)
        # pkg/og/convert/pprof/profile.go RawProfile.createLabels: the
        # server's own __name__, __delta__, pyroscope_spy and service_name,
        # then the name's labels (not those starting with "__").
        labels = [("__name__", metric_name(prof)), ("__delta__", "false"),
                  ("pyroscope_spy", q.get("spyName", "unknown"))]
        if "service_name" not in dict(name_labels):
            labels.append(("service_name", app))
        labels += [(k, v) for k, v in name_labels if not k.startswith("__")]
        t_ns = facts["time_nanos"] or int(q.get("from", "0")) * 10**9
        stored = self.admit(labels, prof, len(pprof), t_ns)
        rec = self.base_record("ingest")
        rec.update(facts)
        rec["labels"] = labels
        rec["series"] = stored
        rec["id"] = ""
        return pprof, rec

    def ingest_jfr(self, q, name, body):
        ctype = self.headers.get("Content-Type", "")
        m = re.match(r'^multipart/form-data;\s*boundary="?([^";]+)"?$', ctype)
        if not m:
            raise BadRequest(400, "invalid_argument",
                             "format=jfr needs a multipart/form-data body, not %r" % ctype)
        parts = parse_multipart(body, m.group(1).encode())
        if "jfr" not in parts:
            raise BadRequest(400, "invalid_argument", "no \"jfr\" part in the form")
        jfr = parts["jfr"]
        if jfr[:2] == b"\x1f\x8b":
            try:
                jfr = gzip.decompress(jfr)
            except OSError as e:
                raise BadRequest(400, "invalid_argument", "jfr: bad gzip: %s" % e)
        if len(jfr) < 68 or jfr[:4] != b"FLR\0":
            raise BadRequest(400, "invalid_argument", "the jfr part is not a JFR recording")
        chunk = int.from_bytes(jfr[8:16], "big")
        if chunk < 68 or chunk > len(jfr):
            raise BadRequest(400, "invalid_argument", "JFR chunk size %d does not fit %d bytes"
                             % (chunk, len(jfr)))
        # pkg/og/convert/jfr/profile.go ParseToPprof: each profile of the
        # recording is stamped with the request's from (jfr-parser
        # pprof.ParseJFR takes StartTime) and validated like a push.
        check_time(int(q.get("from", "0")) * 10**9, STATE.args.reject_older_than)
        app, name_labels = parse_name(name)
        # jfr-parser pprof/pyroscope/pyroscope.go Labels: the name's labels
        # (not "__" ones), then pyroscope_spy, __delta__, jfr_event, __name__
        # and service_name (app_name if the name has a service_name). This
        # fake does not read the events: the label count is what matters.
        labels = [(k, v) for k, v in name_labels if not k.startswith("__")]
        svc = "app_name" if "service_name" in dict(labels) else "service_name"
        labels += [("pyroscope_spy", q.get("spyName", "unknown")), ("__delta__", "false"),
                   ("jfr_event", "cpu"), ("__name__", "process_cpu"), (svc, app)]
        stored = [check_series_labels(labels, not STATE.args.no_label_sanitization)]
        rec = self.base_record("ingest-jfr")
        rec.update({"time_nanos": int(q.get("from", "0")) * 10**9, "duration_nanos": 0,
                    "samples": 0, "sample_labels": {}, "labels": labels, "id": "",
                    "series": stored, "parts": sorted(parts)})
        return jfr, rec, ".jfr"

    def store(self, pprof, rec, ext=".pb"):
        with STATE.lock:
            n = len(STATE.accepted)
            rec["n"] = n
            base = os.path.join(STATE.args.out, "%06d" % n)
            with open(base + ext + ".tmp", "wb") as f:
                f.write(pprof)
            os.rename(base + ext + ".tmp", base + ext)
            rec["file"] = base + ext
            with open(base + ".json", "w") as f:
                json.dump(rec, f, indent=1, sort_keys=True)
            STATE.accepted.append(rec)


class DataServer:
    """The data listener, which can go down and come back on the same port."""

    def __init__(self, port):
        self.port = port
        self.sock = None
        self.thread = None
        self.generation = 0

    def up(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        s.settimeout(0.1)
        self.port = s.getsockname()[1]
        self.generation += 1
        self.sock = s
        STATE.release.clear()
        self.thread = threading.Thread(target=self.accept_loop, args=(s, self.generation), daemon=True)
        self.thread.start()

    def down(self):
        s, self.sock = self.sock, None
        STATE.release.set()  # hung requests and idle keep-alive connections close
        if self.thread:
            self.thread.join()
        if s:
            s.close()

    def accept_loop(self, s, gen):
        conns = []
        while self.sock is s:
            try:
                c, addr = s.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            c.settimeout(None)
            conns.append(c)
            threading.Thread(target=self.serve, args=(c, addr, gen), daemon=True).start()
        # Going down refuses new connections; a request already being
        # handled is answered first (at most 10 s). Cutting it after its
        # profile was stored made the agent retry a delivered window: the
        # server then held it twice (it_pyro_outage under ASan in CI).
        deadline = time.time() + 10
        while time.time() < deadline:
            with STATE.lock:
                if STATE.inflight == 0:
                    break
            time.sleep(0.01)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def serve(self, c, addr, gen):
        class H(DataHandler):
            generation = gen
        try:
            H(c, addr, self)
        except (OSError, ValueError):
            pass
        finally:
            try:
                c.close()
            except OSError:
                pass


class ControlHandler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *a):
        pass

    def text(self, s, status=200):
        b = s.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        p = url.path
        if p == "/mode":
            with STATE.lock:
                STATE.mode = q.get("m", "ok")
                STATE.status = int(q.get("code", "200"))
                STATE.retry_after = q.get("retry_after")
                STATE.count = int(q.get("count", "-1"))
            if STATE.mode != "hang":
                STATE.release.set()
                STATE.release = threading.Event()
            self.text("ok\n")
        elif p == "/down":
            STATE.data.down()
            self.text("down\n")
        elif p == "/up":
            if STATE.data.sock is None:
                STATE.data.up()
            self.text("up %d\n" % STATE.data.port)
        elif p == "/count":
            with STATE.lock:
                self.text("%d %d %d\n" % (len(STATE.accepted), STATE.rejected, len(STATE.requests)))
        elif p == "/list":
            with STATE.lock:
                lines = ["%d %s %d %d %s %.3f" % (r["n"], r["endpoint"], r["time_nanos"], r["samples"],
                                                  r["id"] or "-", r["received_at"])
                         for r in STATE.accepted]
            self.text("".join(l + "\n" for l in lines))
        elif p == "/requests":
            with STATE.lock:
                lines = ["%d %s %d %.3f" % r for r in STATE.requests]
            self.text("".join(l + "\n" for l in lines))
        elif p == "/show":
            with STATE.lock:
                n = int(q.get("n", "0"))
                if n >= len(STATE.accepted):
                    self.text("no such profile\n", 404)
                    return
                r = STATE.accepted[n]
            out = ["path\t" + r["path"], "endpoint\t" + r["endpoint"], "id\t" + r["id"],
                   "id_is_uuid4\t%d" % r.get("id_is_uuid4", 0), "time_nanos\t%d" % r["time_nanos"],
                   "samples\t%d" % r["samples"], "file\t" + r["file"]]
            out += ["query.%s\t%s" % kv for kv in sorted(r["query"].items())]
            out += ["header.%s\t%s" % kv for kv in sorted(r["headers"].items())]
            out += ["label.%s\t%s" % kv for kv in r["labels"]]
            out += ["sample_label.%s\t%s" % (k, ",".join(v)) for k, v in sorted(r["sample_labels"].items())]
            series = r.get("series", [])
            out += ["series\t%d" % len(series),
                    "series_max_labels\t%d" % max((len(x) for x in series), default=0),
                    "mapping0\t%s" % r.get("mapping0", ""), "max_depth\t%d" % r.get("max_depth", 0)]
            # the names as stored (after the 1.x server's sanitization)
            out += ["stored_label.%s\t%s" % kv for kv in sorted({kv for x in series for kv in x})]
            self.text("".join(l + "\n" for l in out))
        elif p == "/quit":
            self.text("bye\n")
            threading.Thread(target=lambda: (time.sleep(0.1), os._exit(0))).start()
        else:
            self.text("unknown control %s\n" % p, 404)


# ---- self-test: the server's own checks, against itself ----

def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num, payload):
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _pprof():
    strings = [b"", b"cpu", b"nanoseconds"]
    st = _varint(1 << 3) + _varint(1) + _varint(2 << 3) + _varint(2)
    sample = _varint(2 << 3) + _varint(10000000)  # value 10 ms (unpacked), no locations
    body = _field(1, st) + _field(2, sample) + b"".join(_field(6, s) for s in strings)
    return gzip.compress(body)


def _vfield(num, v):
    return _varint(num << 3) + _varint(v)


def _pprof2(kind="cpu", nsamples=1, depth=1, labels=(), mapfile="/srv/app", address=0x1800,
            time_ns=None):
    """A profile with one mapping [0x1000, 0x2000), one location and
    nsamples samples of `depth` frames carrying string labels."""
    strings = ["", kind, "nanoseconds", mapfile]
    def idx(x):
        if x not in strings:
            strings.append(x)
        return strings.index(x)
    body = _field(1, _vfield(1, 1) + _vfield(2, 2))
    for i in range(nsamples):
        smp = _field(1, b"".join(_varint(1) for _ in range(depth))) + _vfield(2, 1000 + i)
        for k, v in labels:
            smp += _field(3, _vfield(1, idx(k)) + _vfield(2, idx(v)))
        body += _field(2, smp)
    body += _field(3, _vfield(1, 1) + _vfield(2, 0x1000) + _vfield(3, 0x2000) + _vfield(5, 3))
    body += _field(4, _vfield(1, 1) + _vfield(2, 1) + _vfield(3, address))
    body += _vfield(9, int(time.time() * 1e9) if time_ns is None else time_ns)
    return gzip.compress(body + b"".join(_field(6, x.encode()) for x in strings))


def _push(labels, sid="0d7c1c1e-0b6e-4e7a-9b1a-3c5d7e9f1a2b", raw=None):
    lp = b"".join(_field(1, _field(1, k.encode()) + _field(2, v.encode())) for k, v in labels)
    sample = _field(1, raw or _pprof()) + _field(2, sid.encode())
    return _field(1, lp + _field(2, sample))


def _jfr(chunk=68):
    """A JFR chunk header alone: what the fake checks of a recording."""
    return b"FLR\0\0\2\0\0" + chunk.to_bytes(8, "big") + bytes(52)


def _form(data, name="jfr"):
    return (b"--st-boundary\r\nContent-Disposition: form-data; name=\"" + name.encode() +
            b"\"; filename=\"jfr\"\r\n\r\n" + data + b"\r\n--st-boundary--\r\n")


def self_test(args):
    import urllib.request
    import urllib.error
    port_file = os.path.join(args.dir, "ports")
    args.port_file = port_file
    threading.Thread(target=serve, args=(args,), daemon=True).start()
    for _ in range(100):
        if os.path.exists(port_file):
            break
        time.sleep(0.05)
    with open(port_file) as f:
        port, ctl = map(int, f.read().split())

    def post(path, body, ctype="application/proto", headers=None):
        h = {"Content-Type": ctype}
        h.update(headers or {})
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    push = "/push.v1.PusherService/Push"
    auth = {"Authorization": "Bearer st"}
    t0 = int(time.time())
    jfr_q = "/ingest?name=app%%7Benv%%3Dst%%7D&from=%d&until=%d&format=jfr" % (t0, t0 + 1)
    form = "multipart/form-data; boundary=st-boundary"
    good = [("__name__", "process_cpu"), ("service_name", "selftest")]
    cases = [
        ("good push", post(push, _push(good), headers=auth), 200, None),
        ("duplicate label", post(push, _push(good + [("service_name", "x")]), headers=auth), 400,
         "invalid_argument"),
        ("empty __name__", post(push, _push([("__name__", ""), ("service_name", "a")]), headers=auth),
         400, "invalid_argument"),
        ("no __name__", post(push, _push([("service_name", "a")]), headers=auth), 400, "invalid_argument"),
        ("31 labels", post(push, _push(good + [("k%d" % i, "v") for i in range(29)]), headers=auth),
         400, "invalid_argument"),
        ("wrong content type", post(push, _push(good), "application/json", auth), 415, None),
        ("no auth", post(push, _push(good)), 401, "unauthenticated"),
        ("ingest", post("/ingest?name=app.x&from=%d&until=%d&format=pprof" % (t0, t0 + 1), _pprof(),
                        "binary/octet-stream", auth), 200, None),
        ("ingest bad name", post("/ingest?name=a%20b&format=pprof", _pprof(), "binary/octet-stream",
                                 auth), 400, "invalid_argument"),
        ("not a profile", post("/ingest?name=app&format=pprof", b"\x08\x01", "binary/octet-stream",
                               auth), 400, "sample_type"),
        ("ingest jfr", post(jfr_q, _form(_jfr()), form, auth), 200, None),
        ("jfr not multipart", post(jfr_q, _jfr(), "binary/octet-stream", auth), 400, "multipart"),
        ("jfr part missing", post(jfr_q, _form(_jfr(), "profile"), form, auth), 400, "jfr"),
        ("jfr part not JFR", post(jfr_q, _form(_pprof()), form, auth), 400, "not a JFR"),
        ("jfr bad chunk", post(jfr_q, _form(_jfr(999)), form, auth), 400, "chunk size"),
    ]
    # The rules of the real server (and those where it would store wrong
    # data), each against a profile that breaks only that rule.
    mem = [("__name__", "memory"), ("service_name", "selftest")]
    tags = [("k%d" % i, "v") for i in range(26)]
    thr = [("thread_id", "1"), ("thread_name", "main"), ("thread_state", "running")]
    now = time.time()
    old_q = "/ingest?name=app%%7Benv%%3Dst%%7D&from=%d&until=%d&format=jfr" % (now - 7200, now - 7190)
    many_q = ("/ingest?name=app%7B" + "%2C".join("k%d%%3Dv" % i for i in range(26)) +
              "%7D&from=" + str(int(now)) + "&until=" + str(int(now) + 1) + "&format=jfr")
    cases += [
        ("memory, no __delta__", post(push, _push(mem, raw=_pprof2("alloc_space")), headers=auth),
         400, "__delta__"),
        ("memory, __delta__", post(push, _push(mem + [("__delta__", "false")], raw=_pprof2("alloc_space")),
                                   headers=auth), 200, None),
        ("31 with sample labels", post(push, _push(good + tags[:26], raw=_pprof2(labels=thr)),
                                       headers=auth), 400, "limit 30"),
        ("30 with sample labels", post(push, _push(good + tags[:25], raw=_pprof2(labels=thr)),
                                       headers=auth), 200, None),
        ("older than 1h", post(push, _push(good, raw=_pprof2(time_ns=int((now - 3700) * 1e9))),
                               headers=auth), 400, "outside of ingestion window"),
        ("10 min ahead", post(push, _push(good, raw=_pprof2(time_ns=int((now + 700) * 1e9))),
                              headers=auth), 400, "outside of ingestion window"),
        ("dotted name", post(push, _push(good + [("host.name", "h")], raw=_pprof2()), headers=auth),
         200, None),
        ("dash in a name", post(push, _push(good + [("my-tag", "x")], raw=_pprof2()), headers=auth),
         400, "invalid label name"),
        ("same after dots", post(push, _push(good + [("a.b", "1"), ("a_b", "2")], raw=_pprof2()),
                                 headers=auth), 400, "duplicate label name"),
        ("no samples", post(push, _push(good, raw=_pprof2(nsamples=0)), headers=auth), 400, "no samples"),
        ("1001 frames", post(push, _push(good, raw=_pprof2(depth=1001)), headers=auth), 400, "1001 frames"),
        ("libc as mapping[0]", post(push, _push(good, raw=_pprof2(mapfile="/lib/libc.so.6")),
                                    headers=auth), 400, "main binary"),
        ("address unmapped", post(push, _push(good, raw=_pprof2(depth=2, address=0x7ffc07b7f027)),
                                  headers=auth),
         400, "outside every mapping"),
        ("thread_name ?", post(push, _push(good, raw=_pprof2(labels=[("thread_name", "?")])),
                               headers=auth), 400, "thread_name"),
        ("jfr older than 1h", post(old_q, _form(_jfr()), form, auth), 400, "outside of ingestion window"),
        ("jfr 31 labels", post(many_q, _form(_jfr()), form, auth), 400, "limit 30"),
    ]
    failed = 0
    for name, (status, body), want, code in cases:
        ok = status == want and (code is None or code.encode() in body)
        failed += not ok
        print("%s %-20s %d %s" % ("ok  " if ok else "FAIL", name, status, body[:80]))
    accepted = len([f for f in os.listdir(args.out) if f.endswith(".pb")])
    if accepted != 5:
        failed += 1
        print("FAIL stored %d profiles, expected 5" % accepted)
    stored = []
    for fn in sorted(os.listdir(args.out)):
        if fn.endswith(".json"):
            with open(os.path.join(args.out, fn)) as f:
                rec = json.load(f)
            if ["host.name", "h"] in rec["labels"]:
                stored = rec["series"][0]
    if ["host_name", "h"] not in stored or any(n == "host.name" for n, _ in stored):
        failed += 1
        print("FAIL host.name not stored as host_name: %s" % stored)
    jfrs = len([f for f in os.listdir(args.out) if f.endswith(".jfr")])
    if jfrs != 1:
        failed += 1
        print("FAIL stored %d JFR recordings, expected 1" % jfrs)
    return 1 if failed else 0


def serve(args):
    global STATE
    os.makedirs(args.out, exist_ok=True)
    STATE = State(args)
    STATE.data = DataServer(args.port)
    STATE.data.up()
    ctl = ThreadingHTTPServer(("127.0.0.1", 0), ControlHandler)
    ctl.daemon_threads = True
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d\n" % (STATE.data.port, ctl.server_address[1]))
    os.rename(tmp, args.port_file)
    threading.Thread(target=lambda: (time.sleep(args.lifetime), os._exit(0)), daemon=True).start()
    # A test that fails exits without stopping us: follow it (reparented),
    # so that CTest, which waits for our end of its output, is not held.
    parent = os.getppid()

    def orphan_watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)
    threading.Thread(target=orphan_watch, daemon=True).start()
    ctl.serve_forever()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port-file")
    ap.add_argument("--self-test", action="store_true",
                    help="check the server's own validation against itself, then exit")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--lifetime", type=float, default=300)
    ap.add_argument("--expect-bearer")
    ap.add_argument("--expect-basic")
    ap.add_argument("--expect-tenant")
    ap.add_argument("--reject-older-than", type=float, default=3600,
                    help="seconds; the server's validation.reject-older-than (0: off)")
    ap.add_argument("--no-label-sanitization", action="store_true",
                    help="accept any UTF-8 label name as current servers do by default "
                         "(validation.disable-label-sanitization); default: the 1.x rules")
    ap.add_argument("--main-binary", help="the path mapping[0] must have")
    args = ap.parse_args()
    args.out = args.dir
    if args.self_test:
        import shutil
        import tempfile
        os.makedirs(args.dir, exist_ok=True)
        scratch = tempfile.mkdtemp(dir=args.dir)
        args.dir = scratch
        args.out = os.path.join(scratch, "received")
        args.expect_bearer = "st"
        rc = self_test(args)
        shutil.rmtree(scratch, ignore_errors=True)
        return rc
    if not args.port_file:
        ap.error("--port-file is required")
    serve(args)


if __name__ == "__main__":
    sys.exit(main())
