#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// sigv4_front.js - the S3 reporter's test peer: s3rver (a fake S3 that
// keeps objects on disk) behind a front that re-computes every request's
// AWS Signature V4 with AWS's own signer (@smithy/signature-v4, the
// signer of the AWS SDK for JavaScript v3) and rejects mismatches with
// 403 before proxying to s3rver. It also checks that the signed
// x-amz-content-sha256 is the hash of the body actually received, so a
// changed body is caught as S3 catches it.
//
// Usage: node sigv4_front.js --dir DIR --port-file FILE --bucket NAME
//          [--key AKID:SECRET[:TOKEN]]... [--owner ACCOUNT] [--lifetime SECONDS]
//          [--self-test]
// With --owner, a request whose x-amz-expected-bucket-owner names another
// account is refused with 403 AccessDenied, as S3 does.
// Listens on 127.0.0.1, random ports; writes {"port":P,"s3port":Q} to FILE.
//
// Control (unsigned, on the same port, for the tests):
//   GET /__ctl/fail?status=503&code=ServiceUnavailable&n=2  answer the next n
//        signed requests with that error (S3 XML) instead of proxying
//   GET /__ctl/tamper?what=header|body  change the next request before
//        verifying it, as a man in the middle would
//   GET /__ctl/stats   {"requests","accepted","rejected","injected","reasons"}
'use strict';
const http = require('http');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const S3rver = require('s3rver');
const { SignatureV4 } = require('@smithy/signature-v4');
const { Sha256 } = require('@aws-crypto/sha256-js');

function parseArgs(argv) {
  const a = { keys: [], lifetime: 280 };
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i];
    const v = () => argv[++i];
    if (k === '--dir') a.dir = v();
    else if (k === '--port-file') a.portFile = v();
    else if (k === '--bucket') a.bucket = v();
    else if (k === '--key') a.keys.push(v());
    else if (k === '--lifetime') a.lifetime = Number(v());
    else if (k === '--owner') a.owner = v();
    else if (k === '--self-test') a.selfTest = true;
    else throw new Error(`unknown argument ${k}`);
  }
  if (!a.dir || !a.bucket || (!a.portFile && !a.selfTest)) throw new Error('--dir, --bucket and --port-file are required');
  if (a.keys.length === 0) a.keys.push('S3RVER:S3RVER');
  return a;
}

const args = parseArgs(process.argv);
const keys = new Map();
for (const k of args.keys) {
  const [akid, secret, token] = k.split(':');
  keys.set(akid, { accessKeyId: akid, secretAccessKey: secret, sessionToken: token || undefined });
}
const stats = { requests: 0, accepted: 0, rejected: 0, injected: 0, reasons: [] };
let fail = null;      // {status, code, n}
let tamper = null;    // 'header' | 'body'

function s3Error(res, status, code, message) {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code>` +
    `<Message>${message}</Message><RequestId>front</RequestId></Error>`;
  res.writeHead(status, { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function reject(res, status, code, message) {
  stats.rejected++;
  stats.reasons.push(`${code}: ${message}`);
  s3Error(res, status, code, message);
}

// Parses "AWS4-HMAC-SHA256 Credential=A/D/R/S/aws4_request, SignedHeaders=a;b, Signature=hex"
function parseAuth(h) {
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(h || '');
  if (!m) return null;
  return { akid: m[1], date: m[2], region: m[3], service: m[4], signed: m[5].split(';'), signature: m[6] };
}

function amzDate(s) {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s || '');
  if (!m) return null;
  return new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]));
}

function parseQuery(q) {
  const out = {};
  if (!q) return out;
  for (const part of q.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const k = decodeURIComponent(eq < 0 ? part : part.slice(0, eq));
    const v = eq < 0 ? '' : decodeURIComponent(part.slice(eq + 1));
    out[k] = v;
  }
  return out;
}

// Returns null if the request is signed right, else [status, code, message].
async function verify(req, body) {
  const auth = parseAuth(req.headers.authorization);
  if (!auth) return [403, 'AccessDenied', 'missing or malformed AWS4-HMAC-SHA256 Authorization header'];
  const creds = keys.get(auth.akid);
  if (!creds) return [403, 'InvalidAccessKeyId', `unknown access key ${auth.akid}`];
  if (auth.service !== 's3') return [403, 'SignatureDoesNotMatch', `service ${auth.service} is not s3`];
  const when = amzDate(req.headers['x-amz-date']);
  if (!when) return [403, 'AccessDenied', 'missing or malformed x-amz-date'];
  if (Math.abs(Date.now() - when.getTime()) > 15 * 60 * 1000)
    return [403, 'RequestTimeTooSkewed', 'the difference between the request time and the current time is too large'];
  const declared = req.headers['x-amz-content-sha256'];
  if (!declared) return [400, 'InvalidRequest', 'missing x-amz-content-sha256'];
  if (declared === 'UNSIGNED-PAYLOAD') return [403, 'AccessDenied', 'this front requires signed payloads'];
  const actual = crypto.createHash('sha256').update(body).digest('hex');
  const owner = req.headers['x-amz-expected-bucket-owner'];
  if (args.owner && owner !== undefined && owner !== args.owner)
    return [403, 'AccessDenied', 'the bucket is owned by another account'];
  if (declared !== actual)
    return [400, 'XAmzContentSHA256Mismatch', "the provided 'x-amz-content-sha256' header does not match what was computed"];
  for (const must of ['host', 'x-amz-date', 'x-amz-content-sha256'])
    if (!auth.signed.includes(must)) return [403, 'AccessDenied', `${must} is not signed`];
  if (creds.sessionToken && !auth.signed.includes('x-amz-security-token'))
    return [403, 'InvalidToken', 'the session token is missing or not signed'];
  const q = req.url.indexOf('?');
  const headers = {};
  for (const h of auth.signed) {
    if (req.headers[h] === undefined) return [403, 'AccessDenied', `signed header ${h} is absent`];
    headers[h] = req.headers[h];
  }
  const signer = new SignatureV4({
    credentials: creds, region: auth.region, service: 's3', sha256: Sha256,
    uriEscapePath: false, applyChecksum: true,
  });
  const hostHeader = req.headers.host || '';
  const signed = await signer.sign({
    method: req.method, protocol: 'http:', hostname: hostHeader.split(':')[0],
    path: q < 0 ? req.url : req.url.slice(0, q), query: parseQuery(q < 0 ? '' : req.url.slice(q + 1)),
    headers, body,
  }, { signingDate: when, signableHeaders: new Set(auth.signed) });
  const expect = parseAuth(signed.headers.authorization);
  if (!expect || expect.signature !== auth.signature)
    return [403, 'SignatureDoesNotMatch', 'the request signature we calculated does not match the signature you provided'];
  return null;
}

function proxy(req, res, body, s3port) {
  const up = http.request({ host: '127.0.0.1', port: s3port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
    res.writeHead(ur.statusCode, ur.headers);
    ur.pipe(res);
    if (ur.statusCode >= 200 && ur.statusCode < 300) stats.accepted++;
  });
  up.on('error', (e) => s3Error(res, 502, 'BadGateway', String(e)));
  up.end(body);
}

function control(req, res) {
  const u = new URL(req.url, 'http://x');
  const send = (o) => { const b = JSON.stringify(o); res.writeHead(200, { 'Content-Type': 'application/json' }); res.end(b); };
  if (u.pathname === '/__ctl/fail') {
    fail = { status: Number(u.searchParams.get('status') || 503), code: u.searchParams.get('code') || 'ServiceUnavailable', n: Number(u.searchParams.get('n') || 1) };
    return send({ ok: true });
  }
  if (u.pathname === '/__ctl/tamper') { tamper = u.searchParams.get('what'); return send({ ok: true }); }
  if (u.pathname === '/__ctl/stats') return send(stats);
  res.writeHead(404); res.end();
}

function applyTamper(req, body) {
  const what = tamper;
  tamper = null;
  if (what === 'body' && body.length) {
    const b = Buffer.from(body);
    b[b.length >> 1] ^= 0x01;
    // a man in the middle who fixes up the hash header is caught by the signature
    req.headers['x-amz-content-sha256'] = crypto.createHash('sha256').update(b).digest('hex');
    return b;
  }
  if (what === 'header') {
    const auth = parseAuth(req.headers.authorization);
    const h = auth && auth.signed.find((x) => x === 'content-type') || auth && auth.signed.find((x) => x !== 'host' && x !== 'x-amz-date' && x !== 'x-amz-content-sha256');
    if (h) req.headers[h] = req.headers[h] + 'x';
  }
  return body;
}

async function main() {
  fs.mkdirSync(args.dir, { recursive: true });
  const s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: args.dir,
    configureBuckets: [{ name: args.bucket }] });
  const { port: s3port } = await s3.run();
  const front = http.createServer((req, res) => {
    if (req.url.startsWith('/__ctl/')) return control(req, res);
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      stats.requests++;
      let body = Buffer.concat(chunks);
      if (tamper) body = applyTamper(req, body);
      try {
        const bad = await verify(req, body);
        if (bad) return reject(res, bad[0], bad[1], bad[2]);
      } catch (e) {
        return reject(res, 403, 'SignatureDoesNotMatch', `cannot verify: ${e.message}`);
      }
      if (fail && fail.n > 0) {
        fail.n--;
        stats.injected++;
        return s3Error(res, fail.status, fail.code, 'injected by the test');
      }
      proxy(req, res, body, s3port);
    });
  });
  await new Promise((r) => front.listen(0, '127.0.0.1', r));
  const port = front.address().port;
  if (args.selfTest) return selfTest(port, s3, front);
  const tmp = args.portFile + '.tmp';
  fs.writeFileSync(tmp, JSON.stringify({ port, s3port }));
  fs.renameSync(tmp, args.portFile);
  const stop = async () => { front.close(); await s3.close(); process.exit(0); };
  setTimeout(stop, args.lifetime * 1000).unref();
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// The front's own checks against itself, signing with the same AWS signer:
// a front that accepted anything would prove nothing.
async function selfTest(port, s3, front) {
  const [akid] = keys.keys();
  const creds = keys.get(akid);
  const body = Buffer.from('hello s3');
  const sign = async (c, b, extra = {}) => {
    const signer = new SignatureV4({ credentials: c, region: 'us-east-1', service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: true });
    const hash = crypto.createHash('sha256').update(b).digest('hex');
    return signer.sign({ method: 'PUT', protocol: 'http:', hostname: '127.0.0.1', port,
      path: `/${args.bucket}/self%3Atest.bin`, query: {},
      headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/zip', 'x-amz-content-sha256': hash, ...extra }, body: b });
  };
  const send = (rq, b) => new Promise((resolve, reject2) => {
    const r = http.request({ host: '127.0.0.1', port, method: rq.method, path: rq.path, headers: rq.headers }, (res) => {
      const c = []; res.on('data', (x) => c.push(x)); res.on('end', () => resolve([res.statusCode, Buffer.concat(c).toString()]));
    });
    r.on('error', reject2); r.end(b);
  });
  const results = [];
  const expect = (name, got, want) => { results.push(`${got[0] === want ? 'ok  ' : 'FAIL'} ${name}: HTTP ${got[0]} ${got[1].slice(0, 120)}`); return got[0] === want; };
  let ok = true;
  ok &= expect('good signature', await send(await sign(creds, body), body), 200);
  ok &= expect('wrong secret', await send(await sign({ ...creds, secretAccessKey: 'wrong' }, body), body), 403);
  const t = await sign(creds, body); t.headers['content-type'] = 'text/plain';
  ok &= expect('tampered header', await send(t, body), 403);
  ok &= expect('tampered body', await send(await sign(creds, body), Buffer.from('hello s4')), 400);
  const u = await sign(creds, body); u.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
  ok &= expect('unsigned payload', await send(u, body), 403);
  if (args.owner) {
    ok &= expect('right owner', await send(await sign(creds, body, { 'x-amz-expected-bucket-owner': args.owner }), body), 200);
    ok &= expect('wrong owner', await send(await sign(creds, body, { 'x-amz-expected-bucket-owner': '999999999999' }), body), 403);
  }
  const unknown = await sign({ accessKeyId: 'NOPE', secretAccessKey: 'x' }, body);
  ok &= expect('unknown key', await send(unknown, body), 403);
  console.log(results.join('\n'));
  console.log(`${results.filter((r) => r.startsWith('ok')).length} passed, ${results.filter((r) => r.startsWith('FAIL')).length} failed`);
  front.close(); await s3.close();
  process.exit(ok ? 0 : 1);
}

main().catch((e) => { console.error(`sigv4_front: ${e.stack || e}`); process.exit(2); });
