# SPDX-License-Identifier: Apache-2.0
# nginx_conf.sh - sourced by the tests that run nginx (tests/tree,
# tests/attach): nginx_conf DIR writes DIR/nginx.conf for a master and 2
# workers in the foreground, serving DIR/html/index.html (20000 lines) on
# 127.0.0.1:$port (a free port it picks and sets), logs and temp files
# under DIR. The workers run as nobody: DIR and html/ are made reachable.
nginx_conf() {
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
	mkdir -p "$1/html" "$1/logs" "$1/tmp"
	chmod a+x "$T" "$1" "$1/html"
	seq 20000 >"$1/html/index.html"
	cat >"$1/nginx.conf" <<CEOF
daemon off;
master_process on;
worker_processes 2;
pid $1/nginx.pid;
error_log $1/logs/error.log;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $1/tmp; proxy_temp_path $1/tmp; fastcgi_temp_path $1/tmp;
	uwsgi_temp_path $1/tmp; scgi_temp_path $1/tmp;
	server { listen 127.0.0.1:$port reuseport; root $1/html; keepalive_requests 100000; }
}
CEOF
}
