# SPDX-License-Identifier: Apache-2.0
# test_nginx.sh - nginx (master + forked worker, profiled) under a bounded
# load of 100 requests from curl (not profiled) on 127.0.0.1, then a
# graceful quit (SIGQUIT) from the client.
. "$(dirname "$0")/lib.sh"
need nginx curl python3
. "$(dirname "$0")/../tree/nginx_conf.sh"

# setup_dir DIR: a private config on a free port, and the client started in
# the background: it waits for the server (bounded), sends 100 requests,
# writes what it got to DIR/client.out and asks nginx to quit.
setup_dir() {
	# nginx's worker runs as nobody: the scratch directory (mode 700) must
	# let it reach html/
	chmod a+x "$T" "$T/nginx"
	nginx_conf "$1" 1 "" ""
	(
		i=0
		until [ -s "$1/nginx.pid" ] && curl -s -o /dev/null "http://127.0.0.1:$port/"; do
			i=$((i + 1)); [ $i -gt 600 ] && { echo "nginx did not start" >"$1/client.out"; break; }
			sleep 0.05
		done
		for i in $(seq 100); do curl -s "http://127.0.0.1:$port/index.html" | cksum; done | sort | uniq -c >"$1/client.out"
		kill -QUIT "$(cat "$1/nginx.pid")"
	) </dev/null >/dev/null 2>&1 &
}
check_output() {
	[ "$2" = plain ] && d=$T/nginx/plain || d=$T/nginx/$2
	expect="    100 $(seq 20000 | cksum)"
	[ "$(cat "$d/client.out" 2>/dev/null)" = "$expect" ] && return 0
	sed 's/^/    client: /' "$d/client.out" >&2
	return 1
}
# nginx quits when the client is done (bounded: the client's wait is)
# -e: 100 requests take a few samples at most (0.08 s of CPU in all), and a
# process that took none writes no profile; tests/tree/ measures the
# workers' CPU under real load.
realprog nginx -p -e -- nginx -e stderr -p . -c nginx.conf
done_tests
