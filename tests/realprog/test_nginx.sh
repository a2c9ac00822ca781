# test_nginx.sh - nginx (master + forked worker) under a bounded load of
# 300 requests from curl on 127.0.0.1, then a graceful quit.
. "$(dirname "$0")/lib.sh"
need nginx curl python3
cat >"$T/serve.sh" <<'SEOF'
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
mkdir -p html logs tmp
seq 20000 >html/index.html
cat >nginx.conf <<CEOF
daemon off;
master_process on;
worker_processes 1;
pid $PWD/nginx.pid;
error_log $PWD/logs/error.log;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $PWD/tmp; proxy_temp_path $PWD/tmp; fastcgi_temp_path $PWD/tmp;
	uwsgi_temp_path $PWD/tmp; scgi_temp_path $PWD/tmp;
	server { listen 127.0.0.1:$port; root $PWD/html; }
}
CEOF
"$@" -p "$PWD" -c "$PWD/nginx.conf" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
i=0
until curl -s -o /dev/null "http://127.0.0.1:$port/"; do
	i=$((i + 1)); [ $i -gt 200 ] && { echo "nginx did not start" >&2; exit 1; }
	sleep 0.05
done
n=0
for i in $(seq 300); do
	curl -s "http://127.0.0.1:$port/index.html" | cksum
done | sort | uniq -c
kill -QUIT $pid
wait $pid
echo "server exit $?"
trap - EXIT
SEOF
realprog nginx -f -- sh "$T/serve.sh" nginx
done_tests
