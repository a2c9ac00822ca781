# test_redis.sh - redis-server profiled while redis-benchmark (not
# profiled) sends it a bounded load on 127.0.0.1; redis-cli shuts it down.
. "$(dirname "$0")/lib.sh"
need redis-server redis-benchmark redis-cli python3
# The server is the program: a private config, 127.0.0.1, a free port, no
# persistence. The wrapper starts it, loads it and shuts it down; it prints
# what the benchmark and the data say.
cat >"$T/serve.sh" <<'SEOF'
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
"$@" --bind 127.0.0.1 --port "$port" --save '' --appendonly no --daemonize no --dir "$PWD" --logfile "$PWD/redis.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
i=0
until redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -gt 200 ] && { echo "redis did not start" >&2; exit 1; }
	sleep 0.05
done
redis-benchmark -h 127.0.0.1 -p "$port" -n 20000 -c 10 -q -t set,get,incr,lpush,lpop >bench.txt 2>&1
echo "bench $? $(grep -c 'requests per second' bench.txt)"
redis-cli -h 127.0.0.1 -p "$port" set k v >/dev/null
echo "get $(redis-cli -h 127.0.0.1 -p "$port" get k) counter $(redis-cli -h 127.0.0.1 -p "$port" get counter:__rand_int__)"
redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1
wait $pid
echo "server exit $?"
trap - EXIT
SEOF
# -f: the server, the benchmark and redis-cli are all profiled.
realprog redis -f -- sh "$T/serve.sh" redis-server
done_tests
