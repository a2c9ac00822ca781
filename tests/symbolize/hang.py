# SPDX-License-Identifier: Apache-2.0
"""hang.py - a TCP server that accepts connections and never answers:
the debuginfod server that hangs. Prints its port (on 127.0.0.1), then
serves until killed."""
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
