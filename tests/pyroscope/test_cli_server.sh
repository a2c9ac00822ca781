# SPDX-License-Identifier: Apache-2.0
# test_cli_server.sh - `emberprof run --server URL ...` sends the demo's
# profiles to a (fake) Pyroscope server with the tenant, token and headers
# given, without creating a local directory unless -o is given; bad
# server options are refused before the program starts, naming the option.
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
: "${EMBER_DEMO:?EMBER_DEMO must name the demo executable}"
: "${EMBER_PYTHON3:?}" "${EMBER_FAKE_SERVER:?}"
for v in $(env | sed -n 's/^\(PYROSCOPE_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done

"$EMBER_PYTHON3" "$EMBER_FAKE_SERVER" --dir "$T/recv" --port-file "$T/ports" --lifetime 150 \
	--expect-bearer tok-cli --expect-tenant cli-t &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$T"' EXIT
i=0
while [ ! -s "$T/ports" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
read -r port ctl <"$T/ports" || { echo "FAIL: fake server did not start" >&2; exit 1; }
ctl_get() { "$EMBER_PYTHON3" -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "http://127.0.0.1:$ctl$1"; }
show() { ctl_get "/show?n=$1" | awk -F '\t' -v k="$2" '$1 == k { print $2 }'; }

"$EMBERPROF" run --server "http://127.0.0.1:$port/base" --tenant cli-t --auth-token tok-cli \
	--header 'X-Cli: yes' --header 'X-Two: 2' --interval 1s -- "$EMBER_DEMO" --threads 1 --seconds 2 >out 2>err
check_exit "run --server" 0 $?
set -- $(ctl_get /count)
if [ "${1:-0}" -ge 1 ]; then ok "the server accepted $1 profile(s)"; else fail "the server accepted none:"; sed 's/^/    /' err >&2; fi
[ "$(show 0 path)" = "/base/push.v1.PusherService/Push" ] && ok "base path kept" || fail "path: $(show 0 path)"
[ "$(show 0 header.x-cli)" = "yes" ] && [ "$(show 0 header.x-two)" = "2" ] && ok "headers sent" || fail "headers missing"
[ "$(show 0 label.service_name)" = "$(basename "$EMBER_DEMO")" ] && ok "service_name is the command's name" ||
	fail "service_name: $(show 0 label.service_name)"
if ls -d emberprof-* >/dev/null 2>&1; then fail "a local directory was created without -o"; else ok "no local directory"; fi
check_no_grep "no table without local profiles" err "Total cpu"

before=$(ctl_get /count | cut -d' ' -f1)
"$EMBERPROF" run --server "http://127.0.0.1:$port" --tenant cli-t --auth-token tok-cli -q -o prof -- \
	"$EMBER_DEMO" --threads 1 --seconds 1 >out 2>err
check_exit "run --server -o" 0 $?
after=$(ctl_get /count | cut -d' ' -f1)
[ "$after" -gt "$before" ] && ok "server got profiles with -o too" || fail "no new profiles on the server"
n=$(ls prof 2>/dev/null | grep -c '\.pb\.gz$')
[ "$n" -ge 1 ] && ok "and $n local file(s)" || fail "no local files with -o"

# The real-server rules through the preloaded library: wall and
# thread labels, a dotted tag (warned about: 1.x servers store host_name);
# the fake refuses what a real server refuses or would store wrong.
set -- $(ctl_get /count)
acc0=$1 rej0=$2
"$EMBERPROF" run --server "http://127.0.0.1:$port" --tenant cli-t --auth-token tok-cli --wall \
	--thread-labels --tag host.name=h1 --interval 1s -- "$EMBER_DEMO" --threads 2 --seconds 2 >out 2>err
check_exit "run --server --wall --thread-labels" 0 $?
check_grep "dotted tag warned about" err 'as "host_name"'
set -- $(ctl_get /count)
[ "$1" -gt "$acc0" ] && [ "$2" -eq "$rej0" ] && ok "wall and thread labels accepted ($(($1 - acc0)) profiles, none refused)" ||
	{ fail "refused: $(($2 - rej0)), accepted $(($1 - acc0))"; ctl_get /requests | tail -5 >&2; sed 's/^/    /' err >&2; }

# A process that ends through _exit (dash does, as do most fork children)
# stops no agent: its final window is flushed by the exit hook, and its
# uploads' summary is said there (it was not, so a shell's own uploads
# were missing from the log's sums). One line, whose count the server saw.
if [ "${EMBER_TEST_ENGINE:-library}" != default ]; then
	acc0=$(ctl_get /count | cut -d' ' -f1)
	"$EMBERPROF" run --server "http://127.0.0.1:$port" --tenant cli-t --auth-token tok-cli -q \
		--log-level info --interval 100ms -- \
		sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i + 1)); done' >out 2>err
	check_exit "run --server -- sh" 0 $?
	acc=$(($(ctl_get /count | cut -d' ' -f1) - acc0))
	lines=$(grep -c "uploads: " err)
	said=$(sed -n 's/.*uploads: \([0-9]*\) ok.*/\1/p' err | head -1)
	if [ "$lines" = 1 ] && [ "$acc" -ge 1 ] && [ "$said" = "$acc" ]; then
		ok "sh's agent says its uploads' summary once: $said ok, as the server counted"
	else
		fail "sh: $lines upload summaries, '$said' ok said, $acc accepted by the server:"
		sed 's/^/    /' err >&2
	fi
fi

bad() { # WHAT EXPECTED-IN-STDERR ARGS...
	what=$1 want=$2
	shift 2
	"$EMBERPROF" run "$@" -- "$EMBER_DEMO" --seconds 0.1 >out 2>err
	check_exit "$what" 2 $?
	check_grep "$what" err "$want"
	check_no_grep "$what: program did not run" out "expected profile"
}
bad "ftp URL" "invalid --server" --server ftp://example.com
bad "URL without host" "invalid --server" --server http://
bad "basic auth without password" "expected USER:PASSWORD" --server http://127.0.0.1:1 --basic-auth alice
bad "bad tenant" "invalid --tenant" --server http://127.0.0.1:1 --tenant 'a b'
bad "bad token" "invalid --auth-token" --server http://127.0.0.1:1 --auth-token 'sec ret'
check_no_grep "token not echoed" err "sec ret"
bad "bad header" "expected 'NAME: VALUE'" --server http://127.0.0.1:1 --header NoColon
bad "tenant without server" "EMBERPROF_SERVER_URL is not" --tenant t1
EMBERPROF_SERVER_MAX_AGE=2m bad "interval past the server's age limit" "every window would be refused" --server http://127.0.0.1:1 --interval 5m
EMBERPROF_SERVER_MAX_AGE=5s bad "max age too short" "EMBERPROF_SERVER_MAX_AGE" --server http://127.0.0.1:1
done_tests
