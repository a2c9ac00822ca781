# SPDX-License-Identifier: Apache-2.0
"""tls_proxy.py DIR - an HTTPS server and an HTTP CONNECT proxy in front of
it, both on 127.0.0.1, for the uploads of the environment stress test.

DIR must hold cert.pem and key.pem (a certificate for IP 127.0.0.1). The
server answers every request with 200 and an empty body; the proxy
tunnels CONNECT requests (to any 127.0.0.1 port) and refuses anything
else. Writes "PROXYPORT SERVERPORT" to DIR/ports when both listen, and
appends one line per event to DIR/events: "connect HOST:PORT" (proxy),
"request METHOD PATH" (server). Runs until killed."""
import os
import socket
import ssl
import sys
import threading

D = sys.argv[1]
lock = threading.Lock()


def event(line):
    with lock:
        with open(os.path.join(D, "events"), "a") as f:
            f.write(line + "\n")


def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None, b""
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def serve(conn):
    try:
        while True:
            head, rest = read_head(conn)
            if head is None:
                return
            lines = head.split("\r\n")
            method, path = lines[0].split(" ")[:2]
            length = 0
            for h in lines[1:]:
                k, _, v = h.partition(":")
                if k.strip().lower() == "content-length":
                    length = int(v.strip())
            while len(rest) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                rest += chunk
            event("request %s %s" % (method, path.split("?")[0]))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    except (OSError, ValueError):
        pass
    finally:
        conn.close()


def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def proxy(conn):
    head, rest = read_head(conn)
    if head is None:
        conn.close()
        return
    parts = head.split("\r\n")[0].split(" ")
    if parts[0] != "CONNECT" or not parts[1].startswith("127.0.0.1:"):
        conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
        conn.close()
        return
    event("connect " + parts[1])
    up = socket.create_connection(("127.0.0.1", int(parts[1].split(":")[1])))
    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    if rest:
        up.sendall(rest)
    threading.Thread(target=pump, args=(up, conn), daemon=True).start()
    pump(conn, up)


def listen():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    return s


def accept_loop(s, fn, wrap=None):
    while True:
        conn, _ = s.accept()
        if wrap:
            try:
                conn = wrap(conn)
            except (OSError, ssl.SSLError):
                conn.close()
                continue
        threading.Thread(target=fn, args=(conn,), daemon=True).start()


def main():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(D, "cert.pem"), os.path.join(D, "key.pem"))
    srv, prx = listen(), listen()
    threading.Thread(target=accept_loop, args=(
        srv, serve, lambda c: ctx.wrap_socket(c, server_side=True)), daemon=True).start()
    with open(os.path.join(D, "ports.tmp"), "w") as f:
        f.write("%d %d\n" % (prx.getsockname()[1], srv.getsockname()[1]))
    os.rename(os.path.join(D, "ports.tmp"), os.path.join(D, "ports"))
    accept_loop(prx, proxy)


main()
