# SPDX-License-Identifier: Apache-2.0
"""silent_server.py PORTFILE - a reachable but silent HTTP server: accepts
connections on 127.0.0.1, reads what comes and never answers (a server
that is up but too slow). Writes its port to PORTFILE; runs until killed."""
import socket
import sys
import threading


def hold(conn):
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass


def main():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=hold, args=(conn,), daemon=True).start()


main()
