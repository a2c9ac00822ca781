# SPDX-License-Identifier: Apache-2.0
"""A protocol-checking stand-in for Grafana Pyroscope's debug-info service.

Written from grafana/pyroscope's source, not from emberprof's client:
  api/debuginfo/v1alpha1/debuginfo.proto   the service and its messages
  pkg/debuginfo/store.go                   what the server does (Store)
  pkg/api/api.go, RegisterDebugInfo        the routes
Only Python's standard library; the protobuf wire format by hand (the reader
is tests/pyroscope/fake_pyroscope.py's).

On 127.0.0.1, a free port:
  POST /debuginfo.v1alpha1.DebuginfoService/ShouldInitiateUpload   Connect unary
  POST /debuginfo.v1alpha1.DebuginfoService/UploadFinished         Connect unary
  POST /debuginfo.v1alpha1.DebuginfoService/Upload/{gnu_build_id}  the raw bytes
with the rules of store.go: FileMetadata.type must be EXECUTABLE_FULL (1) or
EXECUTABLE_NO_TEXT (2); the build ID must match ^[a-fA-F0-9]{2,40}$; a "yes"
records an upload in progress; the bytes are taken only while one is in
progress (else 412); UploadFinished needs the bytes (else failed_precondition)
and marks the build ID uploaded, after which ShouldInitiateUpload says no with
the server's "already exists" reason. Connect errors are JSON
{"code","message"} with the HTTP status Connect maps the code to.

Stricter than the real server, to catch a client that writes wrong messages:
fields or wire types the proto does not define, strings that are not UTF-8,
a Content-Type other than application/proto (the real server also takes
application/json), a Connect-Protocol-Version other than 1 are refused with
invalid_argument (415 for the content type).

Auth as configured: expect_bearer / expect_basic ("user:password") /
expect_tenant (X-Scope-OrgID); a mismatch is a 401 unauthenticated. Without
expect_tenant the tenant is the header's, else "anonymous" (multitenancy off).

Modes: refuse=(code, message) answers every ShouldInitiateUpload with that
error; disabled answers it "no" with the server's "disabled" reason;
fail_upload answers the bytes with 500; hang never answers
ShouldInitiateUpload. Everything received is in .log (one dict per request)
and .store.
"""
import base64
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyroscope"))
from fake_pyroscope import BadRequest, fields as _pb_fields  # noqa: E402

SERVICE = "/debuginfo.v1alpha1.DebuginfoService/"
TYPE_EXECUTABLE_FULL = 1
TYPE_EXECUTABLE_NO_TEXT = 2

# store.go's reasons, word for word
REASON_FIRST_TIME = "First time we see this Build ID, therefore please upload!"
REASON_IN_PROGRESS = ("A previous upload is still in-progress and not stale yet "
                      "(only stale uploads can be retried).")
REASON_EXISTS = ("Debuginfo already exists and is not marked as invalid, therefore no "
                 "new upload is needed.")
REASON_DISABLED = "DebugInfo upload disabled"
REASON_EMPTY_ID = "Empty GNU build ID, therefore no upload is needed."

GNU_RE = re.compile(r"^[a-fA-F0-9]{2,40}$")

# Connect's code -> HTTP status (connect protocol, "Error Codes")
CONNECT_HTTP = {"canceled": 499, "unknown": 500, "invalid_argument": 400,
                "deadline_exceeded": 504, "not_found": 404, "already_exists": 409,
                "permission_denied": 403, "resource_exhausted": 429,
                "failed_precondition": 400, "aborted": 409, "out_of_range": 400,
                "unimplemented": 501, "internal": 500, "unavailable": 503,
                "data_loss": 500, "unauthenticated": 401}


class ConnectError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


# ---- protobuf wire format, by hand ----

def fields(b):
    """Yields (number, wire type, value) of one message: the Pyroscope fake's
    reader (tests/pyroscope/fake_pyroscope.py), its refusals as Connect errors."""
    try:
        yield from _pb_fields(b)
    except BadRequest as e:
        raise ConnectError(e.code, e.message)


def decode(b, schema, what):
    """Decodes b by schema {num: (name, kind)}, kind "string", "enum", "bool" or a schema."""
    out = {}
    for num, wire, v in fields(b):
        if num not in schema:
            raise ConnectError("invalid_argument",
                               "%s: field %d is not in debuginfo.proto" % (what, num))
        name, kind = schema[num]
        want = 0 if kind in ("enum", "bool") else 2
        if wire != want:
            raise ConnectError("invalid_argument",
                               "%s.%s: wire type %d, expected %d" % (what, name, wire, want))
        if kind == "string":
            try:
                v = v.decode("utf-8")
            except UnicodeDecodeError:
                raise ConnectError("invalid_argument", "%s.%s: not UTF-8" % (what, name))
        elif isinstance(kind, dict):
            v = decode(v, kind, what + "." + name)
        elif kind == "bool":
            v = v != 0
        out[name] = v
    return out


def varint(v):
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def enc_string(num, s):
    if not s:
        return b""  # proto3: defaults are not written
    b = s.encode("utf-8")
    return varint(num << 3 | 2) + varint(len(b)) + b


def enc_bool(num, v):
    return varint(num << 3) + b"\x01" if v else b""


FILE_METADATA = {1: ("gnu_build_id", "string"), 2: ("go_build_id", "string"),
                 3: ("otel_file_id", "string"), 4: ("name", "string"), 5: ("type", "enum")}
SHOULD_REQUEST = {1: ("file", FILE_METADATA)}
FINISHED_REQUEST = {1: ("gnu_build_id", "string")}


def encode_should_response(should, reason):
    return enc_bool(1, should) + enc_string(2, reason)


# ---- the server ----

class DebuginfoServer:
    def __init__(self, expect_bearer=None, expect_basic=None, expect_tenant=None):
        self.expect_bearer = expect_bearer
        self.expect_basic = expect_basic
        self.expect_tenant = expect_tenant
        self.refuse = None
        self.disabled = False
        self.fail_upload = False
        self.hang = False
        self.lock = threading.Lock()
        self.log = []     # one dict per request
        self.store = {}   # (tenant, build id) -> {"state", "file", "exe", "size"}
        self.stop_event = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                owner.handle(self, "POST")

            def do_GET(self):
                owner.handle(self, "GET")

            def do_PUT(self):
                owner.handle(self, "PUT")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def set_state(self, tenant, build_id, state):
        with self.lock:
            self.store[(tenant, build_id)] = {"state": state, "file": {}, "exe": None,
                                              "size": 0}

    def requests(self, endswith):
        with self.lock:
            return [r for r in self.log if r["path"].endswith(endswith)]

    # -- plumbing --

    def reply(self, h, status, body, ctype):
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def connect_error(self, h, code, message):
        body = json.dumps({"code": code, "message": message}).encode()
        self.reply(h, CONNECT_HTTP[code], body, "application/json")
        return CONNECT_HTTP[code]

    def tenant_of(self, h):
        """The tenant, or raises unauthenticated when the auth is not as configured."""
        auth = h.headers.get("Authorization")
        if self.expect_bearer is not None and auth != "Bearer " + self.expect_bearer:
            raise ConnectError("unauthenticated", "bad or missing bearer token")
        if self.expect_basic is not None:
            want = "Basic " + base64.b64encode(self.expect_basic.encode()).decode()
            if auth != want:
                raise ConnectError("unauthenticated", "bad or missing basic auth")
        org = h.headers.get("X-Scope-OrgID")
        if self.expect_tenant is not None:
            if org != self.expect_tenant:
                raise ConnectError("unauthenticated", "no org id" if org is None
                                   else "unknown org id %r" % org)
            return org
        return org or "anonymous"

    def handle(self, h, method):
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        entry = {"method": method, "path": h.path, "headers": {k.lower(): v for k, v in
                                                                h.headers.items()},
                 "body": body, "status": 0, "msg": None, "time": time.time()}
        with self.lock:
            self.log.append(entry)
        try:
            if not h.path.startswith(SERVICE):
                entry["status"] = self.connect_error(h, "unimplemented", "no such path")
                return
            what = h.path[len(SERVICE):]
            if what.startswith("Upload/"):
                entry["status"] = self.upload(h, method, what[len("Upload/"):], body)
                return
            if method != "POST":
                # connect-go: unary calls are POSTs (GET only for idempotent ones)
                h.send_response(405)
                h.send_header("Allow", "POST")
                h.send_header("Content-Length", "0")
                h.end_headers()
                entry["status"] = 405
                return
            ctype = h.headers.get("Content-Type", "")
            if ctype.split(";")[0].strip() != "application/proto":
                entry["status"] = 415
                self.reply(h, 415, b"", "text/plain")
                return
            cpv = h.headers.get("Connect-Protocol-Version")
            if cpv is not None and cpv != "1":
                raise ConnectError("invalid_argument", "Connect-Protocol-Version %r" % cpv)
            tenant = self.tenant_of(h)
            if what == "ShouldInitiateUpload":
                msg = decode(body, SHOULD_REQUEST, "ShouldInitiateUploadRequest")
                entry["msg"] = msg
                if self.hang:
                    self.stop_event.wait(600)
                    return
                resp = self.should_initiate(tenant, msg)
            elif what == "UploadFinished":
                msg = decode(body, FINISHED_REQUEST, "UploadFinishedRequest")
                entry["msg"] = msg
                resp = self.upload_finished(tenant, msg)
            else:
                raise ConnectError("unimplemented", "no method " + what)
            self.reply(h, 200, resp, "application/proto")
            entry["status"] = 200
        except ConnectError as e:
            entry["status"] = self.connect_error(h, e.code, e.message)

    # -- store.go --

    def should_initiate(self, tenant, msg):
        if self.refuse:
            raise ConnectError(*self.refuse)
        if self.disabled:
            return encode_should_response(False, REASON_DISABLED)
        f = msg.get("file")
        if f is not None and not f.get("gnu_build_id"):
            return encode_should_response(False, REASON_EMPTY_ID)
        if f is None:
            raise ConnectError("invalid_argument", "invalid request: init.File == nil")
        t = f.get("type", 0)
        if t not in (TYPE_EXECUTABLE_FULL, TYPE_EXECUTABLE_NO_TEXT):
            raise ConnectError("invalid_argument",
                               "invalid request: init.File.Type(%d) is not valid" % t)
        bid = f["gnu_build_id"]
        if not GNU_RE.match(bid):
            raise ConnectError("invalid_argument", "invalid gnuBuildID %r" % bid)
        with self.lock:
            md = self.store.get((tenant, bid))
            if md is not None:
                if md["state"] == "uploading":
                    return encode_should_response(False, REASON_IN_PROGRESS)
                return encode_should_response(False, REASON_EXISTS)
            self.store[(tenant, bid)] = {"state": "uploading", "file": f, "exe": None,
                                         "size": 0}
        return encode_should_response(True, REASON_FIRST_TIME)

    def upload(self, h, method, bid, body):
        if method != "POST":  # api.go: WithMethod("POST")
            h.send_response(405)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return 405
        try:
            tenant = self.tenant_of(h)
        except ConnectError:
            self.reply(h, 401, b"unauthorized\n", "text/plain; charset=utf-8")
            return 401
        if not GNU_RE.match(bid):
            self.reply(h, 400, b"invalid gnu_build_id\n", "text/plain; charset=utf-8")
            return 400
        with self.lock:
            md = self.store.get((tenant, bid))
            if md is None or md["state"] != "uploading":
                self.reply(h, 412, b"no pending upload for this build ID\n",
                           "text/plain; charset=utf-8")
                return 412
            if self.fail_upload:
                self.reply(h, 500, b"upload failed\n", "text/plain; charset=utf-8")
                return 500
            md["exe"] = body
        self.reply(h, 200, b"", "text/plain")
        return 200

    def upload_finished(self, tenant, msg):
        bid = msg.get("gnu_build_id", "")
        if not GNU_RE.match(bid):
            raise ConnectError("invalid_argument", "invalid gnu_build_id: %r" % bid)
        with self.lock:
            md = self.store.get((tenant, bid))
            if md is None:
                raise ConnectError("not_found", "no upload metadata found for build ID " + bid)
            if md["state"] != "uploading":
                raise ConnectError("failed_precondition", "upload is not in uploading state")
            if md["exe"] is None:
                raise ConnectError("failed_precondition",
                                   "no uploaded file found for build ID " + bid)
            md["state"] = "uploaded"
            md["size"] = len(md["exe"])
        return b""  # UploadFinishedResponse{}
