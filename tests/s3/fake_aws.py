#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fake_aws.py - fake AWS metadata services and a recording fake S3 for the
S3 reporter's tests (Python 3 standard library only), on one loopback port:

  IMDSv2      PUT /latest/api/token (needs X-aws-ec2-metadata-token-ttl-seconds),
              GET /latest/... (needs X-aws-ec2-metadata-token): the instance
              identity document, placement/region, iam/security-credentials/
  ECS         GET /ecs/task (task metadata v4), GET /ecs/creds (container
              credentials; checks Authorization when a token is set)
  S3          PUT /s3/<bucket>/<key>: records the key and the signing details
              (access key, region, session token, headers); no signature check
              (the SigV4 front over s3rver does that in the other tests)
  control     GET /__ctl/set?name=value&...   GET /__ctl/state (JSON)
              GET /__ctl/release (lets held requests go)

Settings (/__ctl/set): imds=ok|slow|broken|error, ecs=ok|slow|broken,
instance_id, role (empty: no role), expires_in (seconds), ecs_token,
s3_fail=STATUS:CODE[,STATUS:CODE...] (answers for the next PUTs).
"slow" holds the request until /__ctl/release or 20 s.

Usage: fake_aws.py --port-file FILE [--lifetime SECONDS]
"""
import argparse
import datetime
import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

TOKEN = "FAKE-IMDS-TOKEN-1"
lock = threading.Lock()
release = threading.Event()
S = {
    "imds": "ok", "ecs": "ok", "instance_id": "i-0fake_1", "role": "ember-role",
    "expires_in": 3600, "ecs_token": "", "s3_fail": [],
    # counters
    "token_puts": 0, "token_answered": 0, "held": 0, "imds_gets": 0, "imds_creds": 0,
    "ecs_task_gets": 0, "ecs_creds": 0, "ecs_auth_bad": 0, "puts": [],
}


def expiration():
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=int(S["expires_in"]))
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body=b"", ctype="text/plain"):
        if isinstance(body, str):
            body = body.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def hold(self):
        with lock:
            S["held"] += 1
        release.wait(20)
        with lock:
            S["held"] -= 1

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_PUT(self):
        path = urlparse(self.path).path
        data = self.body()
        if path == "/latest/api/token":
            with lock:
                S["token_puts"] += 1
                mode = S["imds"]
            if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                return self.reply(400, "missing TTL header")
            if mode == "slow":
                self.hold()
            with lock:
                S["token_answered"] += 1
            return self.reply(200, TOKEN)
        if path.startswith("/s3/"):
            auth = self.headers.get("Authorization", "")
            m = re.search(r"Credential=([^/]+)/\d{8}/([^/]+)/s3/aws4_request", auth)
            rec = {
                "key": unquote(path.split("/", 3)[3]) if path.count("/") >= 3 else "",
                "bucket": path.split("/")[2],
                "akid": m.group(1) if m else "", "region": m.group(2) if m else "",
                "token": self.headers.get("x-amz-security-token", ""),
                "content_type": self.headers.get("Content-Type", ""),
                "owner": self.headers.get("x-amz-expected-bucket-owner", ""),
                "sha256": self.headers.get("x-amz-content-sha256", ""),
                "len": len(data),
            }
            with lock:
                fail = S["s3_fail"].pop(0) if S["s3_fail"] else None
                rec["answer"] = fail[0] if fail else 200
                S["puts"].append(rec)
            if fail:
                xml = "<?xml version=\"1.0\"?><Error><Code>%s</Code><Message>injected</Message></Error>" % fail[1]
                return self.reply(fail[0], xml, "application/xml")
            return self.reply(200)
        self.reply(404)

    def do_GET(self):
        u = urlparse(self.path)
        path = u.path
        if path.startswith("/__ctl/"):
            return self.control(path, parse_qs(u.query, keep_blank_values=True))
        if path.startswith("/latest/"):
            if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
                return self.reply(401, "")
            with lock:
                S["imds_gets"] += 1
                mode = S["imds"]
            if mode == "error":
                return self.reply(500, "internal error")
            if path == "/latest/dynamic/instance-identity/document":
                if mode == "broken":
                    return self.reply(200, '{"accountId": "123456789012", "instanceId": ', "text/plain")
                doc = {"accountId": "123456789012", "architecture": "x86_64",
                       "instanceId": S["instance_id"], "instanceType": "m5.large",
                       "region": "eu-central-1", "availabilityZone": "eu-central-1a"}
                return self.reply(200, json.dumps(doc, indent=2), "text/plain")
            if path == "/latest/meta-data/placement/region":
                return self.reply(200, "eu-central-1")
            if path == "/latest/meta-data/iam/security-credentials/":
                return self.reply(200, S["role"]) if S["role"] else self.reply(404, "")
            if S["role"] and path == "/latest/meta-data/iam/security-credentials/" + S["role"]:
                with lock:
                    S["imds_creds"] += 1
                return self.reply(200, json.dumps({
                    "Code": "Success", "LastUpdated": "2026-01-01T00:00:00Z", "Type": "AWS-HMAC",
                    "AccessKeyId": "IMDSAKID%d" % S["imds_creds"], "SecretAccessKey": "imds-secret",
                    "Token": "IMDSTOKEN", "Expiration": expiration()}))
            return self.reply(404, "")
        if path == "/ecs/task":
            with lock:
                S["ecs_task_gets"] += 1
                mode = S["ecs"]
            if mode == "slow":
                self.hold()
            if mode == "broken":
                return self.reply(200, '{"Cluster": "default", "TaskARN"', "application/json")
            return self.reply(200, json.dumps({
                "Cluster": "arn:aws:ecs:us-west-2:111122223333:cluster/prof_cluster",
                "TaskARN": "arn:aws:ecs:us-west-2:111122223333:task/prof_cluster/158d1c8083dd49d6b527399fd6414f5c",
                "Family": "prof", "Revision": "3", "Limits": {"CPU": 0.5, "Memory": 1024},
                "Containers": [{"Name": "app"}]}), "application/json")
        if path in ("/ecs/creds", "/ecs/rel/creds"):
            with lock:
                S["ecs_creds"] += 1
                want = S["ecs_token"]
            if want and self.headers.get("Authorization") != want:
                with lock:
                    S["ecs_auth_bad"] += 1
                return self.reply(401, '{"message":"bad token"}')
            return self.reply(200, json.dumps({
                "AccessKeyId": "ECSAKID", "SecretAccessKey": "ecs-secret", "Token": "ECSTOKEN",
                "Expiration": expiration(), "RoleArn": "arn:aws:iam::111122223333:role/x"}))
        self.reply(404, "")

    def control(self, path, q):
        if path == "/__ctl/set":
            with lock:
                for k, v in q.items():
                    v = v[0]
                    if k == "s3_fail":
                        S["s3_fail"] = [(int(x.split(":")[0]), x.split(":")[1]) for x in v.split(",") if x]
                    elif k == "expires_in":
                        S[k] = int(v)
                    elif k in ("imds", "ecs", "instance_id", "role", "ecs_token"):
                        S[k] = v
                    else:
                        return self.reply(400, "unknown setting " + k)
                    if k in ("imds", "ecs") and v != "slow":
                        release.set()
                    elif k in ("imds", "ecs"):
                        release.clear()
            return self.reply(200, "ok")
        if path == "/__ctl/release":
            release.set()
            return self.reply(200, "ok")
        if path == "/__ctl/state":
            with lock:
                return self.reply(200, json.dumps(S, default=str), "application/json")
        self.reply(404, "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--lifetime", type=float, default=280)
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.port_file)
    threading.Timer(a.lifetime, lambda: os._exit(0)).start()
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
