# SPDX-License-Identifier: Apache-2.0
# test_attach_redis.sh - `emberprof attach` on redis-server (a real server
# nobody here wrote) under redis-benchmark on 127.0.0.1: the CPU profile
# names redis's own functions (readQueryFromClient, processCommand...);
# --wall loads the library into it and stops it again; --alloc (x86-64)
# gives an allocation profile whose zmalloc samples carry redis's callers
# (redis allocates through jemalloc, not glibc's malloc); redis answers
# every command as before (the benchmark's requests all complete, PING
# gives PONG after detach) and exits 0 on SHUTDOWN.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib_attach.sh"
need redis-server redis-cli redis-benchmark python3
command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }
attach_probe
ptrace_probe

port=$((20000 + $$ % 20000))
redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no --daemonize no >redis.log 2>&1 &
RP=$!
i=0
while [ "$(redis-cli -p $port ping 2>/dev/null)" != PONG ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(redis-cli -p $port ping)" = PONG ] || { fail "redis did not start"; cat redis.log >&2; exit 1; }

redis-benchmark -p $port -n 100000 -t set,get -q >bench.out 2>&1 &
BP=$!
"$EMBERPROF" attach --duration 1s -o cpu "$RP" >cpu.err 2>&1
check_exit "attach redis" 0 $?
"$EMBERPROF" attach --wall --duration 1s -o wall "$RP" >wall.err 2>&1
check_exit "attach --wall redis" 0 $?
check_grep "attach --wall redis" wall.err "library loaded and agent started"
alloc_arch=$(uname -m)
case "${EMBER_TEST_SANITIZE:-OFF}" in
ON | on | 1 | TRUE | true)
	# as test_attach_alloc.sh: libasan, preloaded into redis so that the
	# sanitized library can be attached, owns malloc (in front of redis's
	# jemalloc), and the sanitized library defines none
	echo "skip attach --alloc redis in the sanitizer build: the sanitizer owns malloc"
	alloc_arch=none
	;;
esac
case $alloc_arch in
x86_64)
	"$EMBERPROF" attach --alloc --duration 1s -o alloc "$RP" >alloc.err 2>&1
	check_exit "attach --alloc redis" 0 $?
	# a stack whose leaf is zmalloc and whose next frame is a named function
	traces=$(go tool pprof -traces -sample_index=alloc_space alloc/*.memory.pb.gz 2>/dev/null)
	callers=$(echo "$traces" | awk '/^-+\+/ { leaf = ""; next }
		leaf == "" && $2 ~ /^zmalloc/ { leaf = $2; next }
		leaf != "" && NF == 1 { if ($1 !~ /^zmalloc|\+0x/) print $1; leaf = "x" }' | sort -u)
	if [ -n "$callers" ]; then
		ok "attach --alloc redis: zmalloc's callers named ($(echo $callers | tr ' ' ','))"
	else
		fail "attach --alloc redis: no named caller of zmalloc:"
		echo "$traces" | head -30 >&2
	fi
	;;
esac
wait $BP
check_exit "redis-benchmark" 0 $?
grep -q "GET: " bench.out && grep -q "SET: " bench.out && ok "the benchmark's SET and GET completed" ||
	{ fail "redis-benchmark did not complete:"; cat bench.out >&2; }
files=$(ls cpu/*.pb.gz 2>/dev/null)
if [ -n "$files" ] && python3 "$FNCPU" cpu $files | grep -E "^(readQueryFromClient|processCommand|call|aeProcessEvents) " >/dev/null; then
	ok "redis's own functions named in its CPU profile"
else
	fail "no redis function in the CPU profile:"
	[ -n "$files" ] && python3 "$FNCPU" cpu $files | head >&2
fi
check_grep "after detach" /dev/stdin PONG <<EOF2
$(redis-cli -p $port ping)
EOF2
redis-cli -p $port shutdown nosave >/dev/null 2>&1
wait $RP
check_exit "redis-server after SHUTDOWN" 0 $?
done_tests
