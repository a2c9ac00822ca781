#!/usr/bin/env python3
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
                                              on the same port
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


def check_series_labels(labels):
    names = [n for n, _ in labels]
    seen = set()
    for n in names:
        if n in seen:
            raise BadRequest(400, "invalid_argument", "duplicate label name: %s" % n)
        seen.add(n)
    d = dict(labels)
    if not d.get("__name__"):
        raise BadRequest(400, "invalid_argument", "invalid or missing metric name __name__")
    if len(labels) > MAX_LABELS:
        raise BadRequest(400, "invalid_argument",
                         "profile series has %d labels, limit is %d" % (len(labels), MAX_LABELS))
    for n, v in labels:
        if not n or len(n.encode()) > MAX_NAME:
            raise BadRequest(400, "invalid_argument", "label name length out of range: %r" % n)
        if len(v.encode()) > MAX_VALUE:
            raise BadRequest(400, "invalid_argument", "label value too long for %s" % n)


def parse_pprof(raw):
    """Minimal profile.proto checks; returns facts for the sidecar."""
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except OSError as e:
            raise BadRequest(400, "invalid_argument", "raw_profile: bad gzip: %s" % e)
    strings, sample_types, samples = [], [], []
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
    sample_labels = {}
    for s in samples:
        for n2, w2, v2 in fields(s):
            if n2 == 3 and w2 == 2:
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
    return raw, {
        "time_nanos": time_nanos,
        "duration_nanos": duration,
        "samples": len(samples),
        "sample_labels": {k: sorted(v) for k, v in sample_labels.items()},
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
        super().handle_one_request()

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

    def push(self, body):
        ctype = self.headers.get("Content-Type", "")
        if ctype != "application/proto":
            raise BadRequest(415, "invalid_argument", "unsupported content type %r" % ctype)
        out = []
        series = decode_push(body)
        if not series:
            raise BadRequest(400, "invalid_argument", "no series")
        for labels, samples in series:
            check_series_labels(labels)
            if not samples:
                raise BadRequest(400, "invalid_argument", "series without samples")
            for raw, sid in samples:
                pprof, facts = parse_pprof(raw)
                rec = self.base_record("push")
                rec.update(facts)
                rec["labels"] = labels
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
        rec = self.base_record("ingest")
        rec.update(facts)
        app = name.split("{")[0]
        rec["labels"] = [("__name__", "process_cpu"), ("service_name", app),
                         ("pyroscope_spy", q.get("spyName", "unknown"))]
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
        rec = self.base_record("ingest-jfr")
        app, _, rest = name.partition("{")
        labels = [("service_name", app), ("pyroscope_spy", q.get("spyName", "unknown"))]
        for kv in rest.rstrip("}").split(",") if rest else []:
            k, _, v = kv.partition("=")
            labels.append((k, v))
        rec.update({"time_nanos": int(q.get("from", "0")) * 10**9, "duration_nanos": 0,
                    "samples": 0, "sample_labels": {}, "labels": labels, "id": "",
                    "parts": sorted(parts)})
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


def _push(labels, sid="0d7c1c1e-0b6e-4e7a-9b1a-3c5d7e9f1a2b"):
    lp = b"".join(_field(1, _field(1, k.encode()) + _field(2, v.encode())) for k, v in labels)
    sample = _field(1, _pprof()) + _field(2, sid.encode())
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
    jfr_q = "/ingest?name=app%7Benv%3Dst%7D&from=1&until=2&format=jfr"
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
        ("ingest", post("/ingest?name=app.x&from=1&until=2&format=pprof", _pprof(),
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
    failed = 0
    for name, (status, body), want, code in cases:
        ok = status == want and (code is None or code.encode() in body)
        failed += not ok
        print("%s %-20s %d %s" % ("ok  " if ok else "FAIL", name, status, body[:80]))
    accepted = len([f for f in os.listdir(args.out) if f.endswith(".pb")])
    if accepted != 2:
        failed += 1
        print("FAIL stored %d profiles, expected 2" % accepted)
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
