# SPDX-License-Identifier: Apache-2.0
# test_redis.sh - redis-server (profiled) while redis-benchmark (not
# profiled) sends it a bounded load on 127.0.0.1; then redis-cli shuts it
# down.
. "$(dirname "$0")/lib.sh"
need redis-server redis-benchmark redis-cli python3

# setup_dir DIR: a free port, and the client in the background: it waits
# for the server (bounded), runs the benchmark, checks a key and shuts the
# server down, writing what it saw to DIR/client.out.
setup_dir() {
	port=$(free_port)
	printf 'bind 127.0.0.1\nport %s\nsave ""\nappendonly no\ndaemonize no\npidfile %s/redis.pid\nlogfile %s/redis.log\ndir %s\n' \
		"$port" "$1" "$1" "$1" >"$1/redis.conf"
	(
		i=0
		until redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1; do
			i=$((i + 1)); [ $i -gt 600 ] && break
			sleep 0.05
		done
		redis-benchmark -h 127.0.0.1 -p "$port" -n 5000 -c 4 -q -t set,get,incr,lpush,lpop >"$1/bench.txt" 2>&1
		echo "bench $? $(grep -c 'requests per second' "$1/bench.txt")" >"$1/client.out"
		redis-cli -h 127.0.0.1 -p "$port" set k v >/dev/null
		echo "get $(redis-cli -h 127.0.0.1 -p "$port" get k)" >>"$1/client.out"
		redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 ||
			kill "$(cat "$1/redis.pid")"
	) </dev/null >/dev/null 2>&1 &
}
check_output() {
	[ "$2" = plain ] && d=$T/redis/plain || d=$T/redis/$2
	[ "$(cat "$d/client.out")" = "$(printf 'bench 0 5\nget v')" ]
}
# The server on 127.0.0.1 only, no persistence; the client stops it.
realprog redis -p -- redis-server redis.conf
done_tests
