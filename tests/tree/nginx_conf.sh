# SPDX-License-Identifier: Apache-2.0
# nginx_conf.sh - sourced by the tests that run nginx (tests/tree,
# tests/attach, tests/realprog):
#   nginx_conf DIR [WORKERS [LISTEN_OPTS [SERVER_OPTS]]]
# writes DIR/nginx.conf for a master and WORKERS workers (2) in the
# foreground, serving DIR/html/index.html (20000 lines) on 127.0.0.1:$port
# (a free port it picks and sets; LISTEN_OPTS after it, "reuseport" unless
# given), with SERVER_OPTS in the server block (a keepalive of 100000
# requests unless given), logs and temp files under DIR. The workers run as
# nobody: DIR and html/ are made reachable.
nginx_conf() {
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
	mkdir -p "$1/html" "$1/logs" "$1/tmp"
	chmod a+x "$T" "$1" "$1/html"
	seq 20000 >"$1/html/index.html"
	cat >"$1/nginx.conf" <<CEOF
daemon off;
master_process on;
worker_processes ${2:-2};
pid $1/nginx.pid;
error_log $1/logs/error.log;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $1/tmp; proxy_temp_path $1/tmp; fastcgi_temp_path $1/tmp;
	uwsgi_temp_path $1/tmp; scgi_temp_path $1/tmp;
	server { listen 127.0.0.1:$port ${3-reuseport}; root $1/html; ${4-keepalive_requests 100000;} }
}
CEOF
}

# nginx_load N : 8 curl clients on kept-alive connections, N requests
# each, to the server nginx_conf set up; returns when all are done
nginx_load() {
	_clients=
	for _c in 1 2 3 4 5 6 7 8; do
		curl -s -o /dev/null "http://127.0.0.1:$port/index.html?[1-$1]" &
		_clients="$_clients $!"
	done
	for _p in $_clients; do wait "$_p"; done
}
