# SPDX-License-Identifier: Apache-2.0
# test_attach_nginx.sh - `emberprof attach` to the master of a running
# nginx (a real server nobody here wrote) with 2 workers it forked before
# the attach (existing descendants, running as nobody): under a bounded
# load from curl on 127.0.0.1 that starts after the attach and ends
# before the detach, the workers' CPU in their profiles (under their pids)
# is within 10 % of what /proc/PID/stat counted for them over the load
# (no wall clock involved: both count the same work). nginx serves the
# same page after detach and exits 0 on SIGQUIT.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib_attach.sh"
need nginx curl python3
command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }
case "${EMBER_TEST_SANITIZE:-OFF}" in
ON | on | 1 | TRUE | true)
	# The sanitized library can only be attached to a process that has
	# libasan loaded first (cli/lib.sh preloads it), and nginx started so
	# never answered its first request here (before any attach).
	echo "skipped in the sanitizer build: nginx with libasan preloaded does not serve"
	exit 77
	;;
esac
attach_probe

. "$(dirname "$0")/../tree/nginx_conf.sh"
W=$T/ng
nginx_conf "$W"
(cd "$W" && exec nginx -e stderr -p . -c nginx.conf) >"$W/nginx.out" 2>&1 &
NG=$!
i=0
until [ -s "$W/nginx.pid" ] && curl -s -m 5 -o /dev/null "http://127.0.0.1:$port/"; do
	i=$((i + 1))
	[ $i -gt 600 ] && { fail "nginx did not start"; cat "$W/nginx.out" >&2; kill $NG; done_tests; }
	sleep 0.05
done
master=$(cat "$W/nginx.pid")
workers=$(ps -o pid= --ppid "$master" | tr -d ' ')
curl -s -m 30 "http://127.0.0.1:$port/index.html" >before.html

"$EMBERPROF" attach -o prof "$master" >attach.err 2>&1 &
EP=$!
wait_grep attach.err "attached to" || fail "attach did not start"
check_grep "the master and its 2 workers" attach.err "attached to 3 processes"
# the workers' user + system ticks (their names hold no space)
ticks() { for w in $workers; do cat "/proc/$w/stat"; done | awk '{ s += $14 + $15 } END { print s }'; }
t0=$(ticks)
nginx_load 1500
t1=$(ticks)
kill -INT $EP
wait $EP
check_exit "attach nginx" 0 $?
counted=$(python3 -c "import sys; print((int(sys.argv[2]) - int(sys.argv[1])) / int(sys.argv[3]))" "$t0" "$t1" "$(getconf CLK_TCK)")
all=$(python3 "$(dirname "$0")/../tree/cpu_by_pid.py" prof)
prof=0
for w in $workers; do
	c=$(echo "$all" | awk -v p="$w" '$1 == p { print $2 }')
	echo "worker $w: ${c:-0} s in its profiles"
	prof=$(python3 -c "print($prof + ${c:-0})")
done
python3 -c "import sys; c, p = map(float, sys.argv[1:]); sys.exit(0 if c >= 0.3 and abs(p - c) <= 0.1 * c else 1)" "$counted" "$prof" &&
	ok "nginx workers: $prof s in their profiles of the $counted s /proc counted over the load" ||
	fail "nginx workers: $prof s in their profiles, /proc counted $counted s over the load (10 %; at least 0.3 s)"
curl -s -m 30 "http://127.0.0.1:$port/index.html" >after.html
cmp -s before.html after.html && ok "nginx serves the same page after detach" || fail "nginx's page changed after detach"
kill -QUIT "$master"
wait $NG
check_exit "nginx after SIGQUIT" 0 $?
done_tests
