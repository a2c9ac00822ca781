# SPDX-License-Identifier: Apache-2.0
"""`emberprof debuginfo upload` against debuginfo_server.py, which enforces
Pyroscope's debug-info protocol: the right build ID (as readelf reads it),
type and bytes; nothing uploaded twice; auth headers as configured; the
server's refusals and its absence give exit 1 and a message naming the file
and the server's answer.

  test_debuginfo_upload.py             the checks (no network but 127.0.0.1)
  test_debuginfo_upload.py --real-proto
        the same messages also checked with classes protoc generates from
        grafana/pyroscope's own api/debuginfo/v1alpha1/debuginfo.proto, in a
        checkout named by EMBER_PYROSCOPE_SRC (exit 77, saying why, without
        it, protoc or python3-protobuf)

Environment: EMBERPROF (the command), CC (default cc).
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debuginfo_server as ds  # noqa: E402

EMBERPROF = os.environ.get("EMBERPROF")
failures = 0


def ok(what):
    print("ok   " + what)


def fail(what):
    global failures
    failures += 1
    print("FAIL: " + what, file=sys.stderr)


def check(cond, what, detail=""):
    if cond:
        ok(what)
    else:
        fail(what + (": " + detail if detail else ""))
    return cond


def run(args, env_extra=None, timeout=120):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("EMBERPROF_") and not k.startswith("PYROSCOPE_")}
    env.update(env_extra or {})
    p = subprocess.run([EMBERPROF] + args, env=env, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def sh(*cmd, cwd=None):
    subprocess.run(cmd, check=True, cwd=cwd)


def readelf_build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def post(url, body, ctype="application/proto", headers=None):
    h = {"Content-Type": ctype}
    h.update(headers or {})
    req = urllib.request.Request(url, data=body, headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def should_req(bid, t, name="x", extra=b""):
    f = ds.enc_string(1, bid) + ds.enc_string(4, name) + (ds.varint(5 << 3) + ds.varint(t)
                                                          if t else b"")
    return ds.varint(1 << 3 | 2) + ds.varint(len(f) + len(extra)) + f + extra


def self_test():
    """The server refuses what it must: a fake that took anything would prove nothing."""
    svc = ds.SERVICE
    with ds.DebuginfoServer(expect_bearer="tok") as s:
        auth = {"Authorization": "Bearer tok"}
        u = s.url + svc
        st, b = post(u + "ShouldInitiateUpload", should_req("abcd", 1), headers={})
        check(st == 401 and b'"unauthenticated"' in b, "self-test: no token: 401", str(st))
        st, b = post(u + "ShouldInitiateUpload", should_req("abcd", 0), headers=auth)
        check(st == 400 and b"Type(0) is not valid" in b, "self-test: type 0 refused", str(st))
        st, b = post(u + "ShouldInitiateUpload", should_req("xyz!", 1), headers=auth)
        check(st == 400 and b"invalid gnuBuildID" in b, "self-test: bad build ID refused")
        st, b = post(u + "ShouldInitiateUpload", should_req("abcd", 1, extra=ds.enc_string(9, "q")),
                     headers=auth)
        check(st == 400 and b"field 9" in b, "self-test: unknown field refused", str(b))
        st, _ = post(u + "ShouldInitiateUpload", should_req("abcd", 1), "application/json",
                     headers=auth)
        check(st == 415, "self-test: other content type: 415", str(st))
        st, _ = post(u + "Upload/abcd", b"bytes", "application/octet-stream", headers=auth)
        check(st == 412, "self-test: bytes without a pending upload: 412", str(st))
        st, b = post(u + "ShouldInitiateUpload", should_req("abcd", 2), headers=auth)
        check(st == 200 and b == ds.encode_should_response(True, ds.REASON_FIRST_TIME),
              "self-test: first time: yes")
        st, b = post(u + "UploadFinished", ds.enc_string(1, "abcd"), headers=auth)
        check(st == 400 and b"failed_precondition" in b,
              "self-test: finished before the bytes: failed_precondition", str(st))
        st, b = post(u + "ShouldInitiateUpload", should_req("abcd", 2), headers=auth)
        check(st == 200 and b == ds.encode_should_response(False, ds.REASON_IN_PROGRESS),
              "self-test: in progress: no")
        st, _ = post(u + "Upload/abcd", b"bytes", "application/octet-stream", headers=auth)
        st2, _ = post(u + "UploadFinished", ds.enc_string(1, "abcd"), headers=auth)
        st3, b = post(u + "ShouldInitiateUpload", should_req("abcd", 2), headers=auth)
        check(st == 200 and st2 == 200 and b == ds.encode_should_response(False,
                                                                          ds.REASON_EXISTS),
              "self-test: after the bytes and finished: already exists")
        st, b = post(u + "UploadFinished", ds.enc_string(1, "abcd"), headers=auth)
        check(st == 400 and b"not in uploading state" in b,
              "self-test: finished twice: failed_precondition")


def free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def build_files(d, cc):
    with open(os.path.join(d, "prog.c"), "w") as f:
        f.write("#include <stdio.h>\n"
                "__attribute__((noinline)) static int work(int n) { int s = 0;\n"
                "  for (int i = 0; i < n; i++) s += i * i; return s; }\n"
                "int main(int argc, char **argv) { (void)argv;\n"
                "  printf(\"%d\\n\", work(argc * 1000)); return 0; }\n")
    with open(os.path.join(d, "lib.c"), "w") as f:
        f.write("int ember_test_lib_fn(int x) { return x * 3 + 1; }\n")
    sh(cc, "-O2", "-g", "-Wl,--build-id", "-o", "prog", "prog.c", cwd=d)
    sh(cc, "-O2", "-g", "-fPIC", "-shared", "-Wl,--build-id", "-o", "libx.so", "lib.c", cwd=d)
    sh(cc, "-O2", "-Wl,--build-id=none", "-o", "noid", "prog.c", cwd=d)
    sh("objcopy", "--only-keep-debug", "prog", "prog.debug", cwd=d)
    sh("strip", "-o", "prog.stripped", "prog", cwd=d)
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not ELF\n")


def calls(s):
    """The requests in order, as (method name or "Upload", build id)."""
    out = []
    for r in s.log:
        what = r["path"][len(ds.SERVICE):]
        if what.startswith("Upload/"):
            out.append(("Upload", what[7:]))
        elif r["msg"] is not None:
            m = r["msg"]
            out.append((what, m["file"]["gnu_build_id"] if "file" in m else m["gnu_build_id"]))
    return out


def main_checks(d, real_proto=None):
    dbg, lib = os.path.join(d, "prog.debug"), os.path.join(d, "libx.so")
    id_dbg, id_lib = readelf_build_id(dbg), readelf_build_id(lib)
    check(id_dbg and id_lib and id_dbg != id_lib, "readelf reads two build IDs")
    data = {dbg: open(dbg, "rb").read(), lib: open(lib, "rb").read()}

    # -- upload with a token, a tenant and an extra header --
    with ds.DebuginfoServer(expect_bearer="tok-1", expect_tenant="team-a") as s:
        args = ["debuginfo", "upload", "--server", s.url + "/", "--auth-token", "tok-1",
                "--tenant", "team-a", "--header", "X-Extra: yes", dbg, lib]
        rc, out, err = run(args)
        check(rc == 0, "upload: exit 0", "%d %s" % (rc, err))
        check(calls(s) == [("ShouldInitiateUpload", id_dbg), ("Upload", id_dbg),
                           ("UploadFinished", id_dbg), ("ShouldInitiateUpload", id_lib),
                           ("Upload", id_lib), ("UploadFinished", id_lib)],
              "the protocol's three steps per file, in order", str(calls(s)))
        sh_reqs = s.requests("ShouldInitiateUpload")
        files = [r["msg"]["file"] for r in sh_reqs]
        check([f.get("type") for f in files] == [ds.TYPE_EXECUTABLE_NO_TEXT,
                                                 ds.TYPE_EXECUTABLE_FULL],
              "types: the debug file EXECUTABLE_NO_TEXT, the library EXECUTABLE_FULL",
              str(files))
        check([f.get("name") for f in files] == ["prog.debug", "libx.so"],
              "FileMetadata.name is the file's base name", str(files))
        st_d, st_l = s.store.get(("team-a", id_dbg)), s.store.get(("team-a", id_lib))
        check(st_d and st_l and st_d["state"] == st_l["state"] == "uploaded",
              "both marked uploaded under the tenant")
        check(st_d and st_d["exe"] == data[dbg] and st_l and st_l["exe"] == data[lib],
              "the server holds the files' exact bytes")
        hdrs = [r["headers"] for r in s.log]
        check(all(h.get("authorization") == "Bearer tok-1" and
                  h.get("x-scope-orgid") == "team-a" and h.get("x-extra") == "yes"
                  for h in hdrs), "token, tenant and extra header on every request")
        check(all(r["headers"].get("content-type") == "application/proto" and
                  r["headers"].get("connect-protocol-version") == "1" and
                  re.fullmatch(r"[0-9]{1,10}", r["headers"].get("connect-timeout-ms", ""))
                  for r in s.log if not r["path"].startswith(ds.SERVICE + "Upload/")),
              "Connect calls: application/proto, Connect-Protocol-Version 1, a timeout")
        check(all(r["path"].startswith(ds.SERVICE) for r in s.log),
              "a trailing '/' in the URL makes no '//'", str([r["path"] for r in s.log]))
        check("uploaded  " + dbg in out and id_dbg in out, "stdout names file and build ID",
              out)
        if real_proto:
            real_proto(s)

        # -- again: the server has both; nothing is sent twice --
        n_before = len(s.log)
        rc, out, err = run(args)
        again = calls(s)[6:]
        check(rc == 0, "second run: exit 0", "%d %s" % (rc, err))
        check(again == [("ShouldInitiateUpload", id_dbg), ("ShouldInitiateUpload", id_lib)],
              "second run: asks, uploads nothing", str(again))
        check(out.count("present   ") == 2 and "already exists" in out,
              "second run: both reported present with the server's reason", out)
        check(len(s.log) == n_before + 2, "second run: two requests only")

        # -- a wrong token: 401, the file named, nothing uploaded --
        rc, out, err = run(["debuginfo", "upload", "--server", s.url, "--auth-token", "nope",
                            "--tenant", "team-a", lib])
        check(rc == 1 and lib in err and "401" in err and "unauthenticated" in err,
              "wrong token: exit 1 naming the file and the server's 401", err)
        check("nope" not in err, "the token is not echoed")

    # -- basic auth and the URL from the environment, as `run` takes them --
    with ds.DebuginfoServer(expect_basic="alice:s3cret") as s:
        rc, out, err = run(["debuginfo", "upload", lib],
                           {"EMBERPROF_SERVER_URL": s.url,
                            "EMBERPROF_SERVER_BASIC_AUTH_USER": "alice",
                            "EMBERPROF_SERVER_BASIC_AUTH_PASSWORD": "s3cret"})
        check(rc == 0 and s.store.get(("anonymous", id_lib), {}).get("state") == "uploaded",
              "basic auth and URL from EMBERPROF_SERVER_*: uploaded", err)
        rc, out, err = run(["debuginfo", "upload", dbg], {"PYROSCOPE_SERVER_ADDRESS": s.url,
                                                          "PYROSCOPE_BASIC_AUTH_USER": "alice",
                                                          "PYROSCOPE_BASIC_AUTH_PASSWORD":
                                                          "s3cret"})
        check(rc == 0 and s.store.get(("anonymous", id_dbg), {}).get("state") == "uploaded",
              "PYROSCOPE_* names: uploaded", err)
        rc, out, err = run(["debuginfo", "upload", "--server", s.url, "--basic-auth",
                            "alice:wrong", lib])
        check(rc == 1 and "401" in err, "wrong password: exit 1, 401", err)

    # -- the server's refusals --
    with ds.DebuginfoServer() as s:
        s.refuse = ("permission_denied", "uploads are not allowed for this tenant")
        rc, out, err = run(["debuginfo", "upload", "--server", s.url, lib])
        check(rc == 1 and lib in err and "403" in err and "permission_denied" in err and
              "not allowed for this tenant" in err,
              "refused: exit 1 with the server's code and message", err)
        s.refuse = None
        s.disabled = True
        rc, out, err = run(["debuginfo", "upload", "--server", s.url, lib])
        check(rc == 1 and "disabled" in err and not s.requests("/Upload/" + id_lib),
              "uploads disabled on the server: exit 1, said", err)
        s.disabled = False
        s.set_state("anonymous", id_lib, "uploading")
        rc, out, err = run(["debuginfo", "upload", "--server", s.url, lib])
        check(rc == 1 and "in progress" in err, "an upload in progress elsewhere: exit 1, said",
              err)
        s.fail_upload = True
        rc, out, err = run(["debuginfo", "upload", "--server", s.url, dbg])
        check(rc == 1 and "upload of the bytes" in err and "500" in err and
              not s.requests("UploadFinished"),
              "the bytes refused (500): exit 1, UploadFinished not called", err)

    # -- files: no build ID, not ELF, a duplicate build ID --
    with ds.DebuginfoServer() as s:
        noid, notes = os.path.join(d, "noid"), os.path.join(d, "notes.txt")
        rc, out, err = run(["debuginfo", "upload", "--server", s.url, noid, notes, lib])
        check(rc == 1 and noid in err and "no GNU build ID" in err and notes in err and
              "not an ELF file" in err, "no build ID / not ELF: refused, named", err)
        check(calls(s) == [("ShouldInitiateUpload", id_lib), ("Upload", id_lib),
                           ("UploadFinished", id_lib)],
              "only the good file reached the server", str(calls(s)))
        prog, stripped = os.path.join(d, "prog"), os.path.join(d, "prog.stripped")
        rc, out, err = run(["debuginfo", "upload", "--server", s.url, prog, stripped])
        check(rc == 0 and len(s.requests("/Upload/" + id_dbg)) == 1 and "skipped" in out,
              "two files with one build ID: one upload", out + err)
        check(s.store[("anonymous", id_dbg)]["file"].get("type") == ds.TYPE_EXECUTABLE_FULL,
              "an unstripped executable is EXECUTABLE_FULL")

    # -- no server: exit 1, said, the other files not tried --
    port = free_port()
    rc, out, err = run(["debuginfo", "upload", "--server", "http://127.0.0.1:%d" % port,
                        dbg, lib])
    check(rc == 1 and dbg in err and "connection refused" in err and "1 file not tried" in err,
          "server down: exit 1, said once", err)

    # -- a server that never answers: the call's timeout ends it --
    with ds.DebuginfoServer() as s:
        s.hang = True
        rc, out, err = run(["debuginfo", "upload", "--server", s.url, "--timeout", "2s", lib])
        check(rc == 1 and lib in err and "no answer" in err and "timed out" in err.lower(),
              "a hanging server: exit 1 after --timeout, said", err)

    # -- usage --
    rc, out, err = run(["debuginfo", "upload", lib])
    check(rc == 2 and "no server" in err, "no server: exit 2", err)
    rc, out, err = run(["debuginfo", "upload", "--server", "http://127.0.0.1:1", "--frob", lib])
    check(rc == 2 and "unknown option" in err, "unknown option: exit 2", err)
    rc, out, err = run(["debuginfo", "upload", "--server", "ftp://x", lib])
    check(rc == 2 and "ftp" in err, "a non-HTTP URL: exit 2", err)
    rc, out, err = run(["debuginfo", "upload", "--server", "http://127.0.0.1:1", "--tenant",
                        "a b", lib])
    check(rc == 2 and "tenant" in err, "a bad tenant: exit 2", err)
    rc, out, err = run(["debuginfo"])
    check(rc == 2 and "upload" in err, "no subcommand: exit 2", err)
    rc, out, err = run(["help", "debuginfo"])
    check(rc == 0 and "debuginfo upload" in out and "--auth-token" in out,
          "help debuginfo", out)


def real_proto_checker(tmp):
    """The --real-proto part: returns a function checking a server's log, or exits 77."""
    src = os.environ.get("EMBER_PYROSCOPE_SRC")
    if not src:
        print("skipped: EMBER_PYROSCOPE_SRC does not name a grafana/pyroscope checkout")
        sys.exit(77)
    proto = os.path.join(src, "api", "debuginfo", "v1alpha1", "debuginfo.proto")
    if not os.path.exists(proto):
        print("skipped: no %s" % proto)
        sys.exit(77)
    if not shutil.which("protoc"):
        print("skipped: no protoc")
        sys.exit(77)
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        print("skipped: %s has no google.protobuf (python3-protobuf)" % sys.executable)
        sys.exit(77)
    # debuginfo.proto's imports that the checkout does not hold: stand-ins
    # for protoc only (the generated code imports the real timestamp_pb2).
    inc = os.path.join(tmp, "inc")
    os.makedirs(os.path.join(inc, "google", "protobuf"))
    os.makedirs(os.path.join(inc, "types", "v1"))
    with open(os.path.join(inc, "google", "protobuf", "timestamp.proto"), "w") as f:
        f.write('syntax = "proto3";\npackage google.protobuf;\n'
                "message Timestamp { int64 seconds = 1; int32 nanos = 2; }\n")
    with open(os.path.join(inc, "types", "v1", "types.proto"), "w") as f:
        f.write('syntax = "proto3";\npackage types.v1;\n')
    out = os.path.join(tmp, "gen")
    os.makedirs(out)
    # the stand-ins first: the checkout's types.proto imports more (gnostic)
    sh("protoc", "-I", inc, "-I", os.path.join(src, "api"), "--python_out", out, proto,
       os.path.join(inc, "types", "v1", "types.proto"))
    # "types" is also Python's own module: the stand-in's code goes in by hand
    import importlib.util
    import types as pytypes
    spec = importlib.util.spec_from_file_location(
        "types.v1.types_pb2", os.path.join(out, "types", "v1", "types_pb2.py"))
    tpb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tpb)
    pkg = pytypes.ModuleType("types.v1")
    pkg.types_pb2 = tpb
    sys.modules["types.v1"] = pkg
    sys.modules["types.v1.types_pb2"] = tpb
    sys.path.insert(0, out)
    from debuginfo.v1alpha1 import debuginfo_pb2 as pb

    def checker(s):
        for r in s.requests("ShouldInitiateUpload"):
            m = pb.ShouldInitiateUploadRequest()
            m.ParseFromString(r["body"])
            check(m.file.gnu_build_id == r["msg"]["file"]["gnu_build_id"] and
                  m.file.type == r["msg"]["file"]["type"] and
                  m.file.name == r["msg"]["file"]["name"] and
                  not m.file.go_build_id and not m.file.otel_file_id and
                  m.file.type in (pb.FileMetadata.TYPE_EXECUTABLE_FULL,
                                  pb.FileMetadata.TYPE_EXECUTABLE_NO_TEXT),
                  "real proto: ShouldInitiateUploadRequest %s" % m.file.gnu_build_id)
            check(m.SerializeToString() == r["body"],
                  "real proto: the request's bytes are the canonical encoding")
        for r in s.requests("UploadFinished"):
            m = pb.UploadFinishedRequest()
            m.ParseFromString(r["body"])
            check(m.gnu_build_id == r["msg"]["gnu_build_id"] and
                  m.SerializeToString() == r["body"], "real proto: UploadFinishedRequest")
        for should, reason in ((True, ds.REASON_FIRST_TIME), (False, ds.REASON_EXISTS)):
            m = pb.ShouldInitiateUploadResponse(should_initiate_upload=should, reason=reason)
            check(m.SerializeToString() == ds.encode_should_response(should, reason),
                  "real proto: the test server's ShouldInitiateUploadResponse (%s)" % should)
        check([f.name for f in pb.DESCRIPTOR.services_by_name["DebuginfoService"].methods]
              [:2] == ["ShouldInitiateUpload", "UploadFinished"],
              "real proto: the service's methods")
    return checker


def main():
    if not EMBERPROF:
        print("EMBERPROF must name the emberprof executable", file=sys.stderr)
        return 2
    for tool in ("readelf", "objcopy", "strip"):
        if not shutil.which(tool):
            print("skipped: no %s (binutils)" % tool)
            return 77
    tmp = tempfile.mkdtemp(prefix="ember-debuginfo-")
    try:
        checker = real_proto_checker(tmp) if "--real-proto" in sys.argv else None
        self_test()
        build_files(tmp, os.environ.get("CC") or "cc")
        main_checks(tmp, checker)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
