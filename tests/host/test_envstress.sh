# SPDX-License-Identifier: Apache-2.0
# test_envstress.sh - a program thread changes the environment in a tight
# loop (host_envstress.c: setenv, unsetenv, clearenv, and the proxy and CA
# variables themselves pointed elsewhere) while the agent uploads a window
# every 100 ms over HTTPS through a proxy (tls_proxy.py: a CONNECT proxy
# and a TLS server on 127.0.0.1) configured by https_proxy and trusted by
# SSL_CERT_FILE, as a user sets them. No thread of emberprof may call
# getenv after start (libgetenv_audit.so records any call made on a
# thread named emberprof*: libcurl would read the proxy variables on every
# transfer, OpenSSL its certificate variables); the proxy and CA come from
# the environment as the program started (src/upload/http.c). Checks: the
# program ends as unprofiled, no sanitizer report, no getenv on our
# threads, every window written is delivered through the proxy (the
# server counts the requests; a live read of the changed variables would
# have sent to a port that refuses), none failed or dropped.
# Run twice: as the command (the agent starts before main; libcurl and
# OpenSSL are loaded and initialized there, on the program's thread), and
# as an image exec'd inside the tree, whose agent starts lazily on a
# helper thread ("emberprof-fork", src/preload/fork_child.c) while the
# program runs: there libcurl and its TLS libraries are loaded and their
# initialization reads about fifteen variables (OPENSSL_CONF,
# OPENSSL_ia32cap, GNUTLS_*, P11_KIT_*...). libemberprof's getenv answers
# those from the start-up copy (src/preload/getenv_hook.c); before it did,
# this run crashed in getenv about once in fifty. The audit library sits
# behind ours in LD_PRELOAD: a call of one of our threads that reaches the
# C library's getenv reaches it first and is recorded.
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"
need python3 openssl
: "${EMBER_GETENV_AUDIT:?EMBER_GETENV_AUDIT must name libgetenv_audit.so}"
secs=${EMBER_ENVSTRESS_SECONDS:-5}

openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 \
	-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 ||
	{ echo "openssl cannot make a test certificate: skipped"; exit 77; }
python3 "$EMBER_TEST_SRCDIR/tests/host/tls_proxy.py" "$T" 2>proxy.err &
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$T"' EXIT
wait_for ports || { fail "the proxy did not start: $(cat proxy.err)"; done_tests; }
read -r pport sport <ports

unset http_proxy HTTP_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY HTTPS_PROXY SSL_CERT_DIR
export https_proxy="http://127.0.0.1:$pport" SSL_CERT_FILE="$T/cert.pem"

# stress NAME COMMAND... : one run, checked.
stress() {
	name=$1
	shift
	rm -rf prof audit events
	EMBER_GETENV_AUDIT_LOG=$T/audit LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }$EMBER_GETENV_AUDIT" \
		"$EMBERPROF" run -q -i 100ms --log-level info -o prof \
		--server "https://127.0.0.1:$sport" -- "$@" >out 2>err
	check_exit "$name: emberprof's status" 0 $?
	check_grep "$name: the program ended normally" out "envstress ok"
	grep -q "envstress ok" out || { echo "$name: its output:"; cat out; tail -20 err; } >&2
	check_no_grep "$name: no sanitizer report" err "Sanitizer"
	check_no_grep "$name: no undefined behaviour report" err "runtime error"
	# the lines naming a call: "getenv NAME THREAD"
	if grep -q '^[a-z_]*getenv ' audit 2>/dev/null; then
		fail "$name: getenv called on emberprof's threads after start:"
		head -40 audit | sed 's/^/    /' >&2
	else
		ok "$name: no getenv on emberprof's threads"
	fi

	windows=$(ls prof | grep -c '\.pb\.gz$')
	# Every process of the tree that reported says its own line (sh too,
	# when a window of its own had samples, more likely on a loaded
	# machine): the sums are the tree's.
	line=$(grep "uploads: " err | sed -n 's/.*uploads: \([0-9]*\) ok, \([0-9]*\) retried, \([0-9]*\) failed, \([0-9]*\) spooled, \([0-9]*\) dropped.*/\1 \2 \3 \4 \5/p' |
		awk '{for (i = 1; i <= 5; i++) s[i] += $i; n++} END {if (n) print s[1], s[2], s[3], s[4], s[5], n}')
	set -- $line
	if [ $# -ne 6 ]; then
		fail "$name: no upload summary in the log: $(tail -5 err)"
		return
	fi
	line="uploads summed over $6 line(s): $1 ok, $2 retried, $3 failed, $4 spooled, $5 dropped"
	requests=$(cat events 2>/dev/null | grep -c '^request POST')
	connects=$(cat events 2>/dev/null | grep -c '^connect 127.0.0.1:')
	echo "$name: windows $windows; uploads $1 ok, $2 retried, $3 failed, $4 spooled, $5 dropped; server: $requests requests, proxy: $connects tunnels; $(grep 'environment changes' err)"
	[ "$windows" -ge 2 ] && ok "$name: windows written ($windows)" || fail "$name: only $windows windows written"
	[ "$1" -eq "$windows" ] && ok "$name: every window uploaded" || fail "$name: $1 uploads for $windows windows: $line"
	[ "$3" -eq 0 ] && [ "$5" -eq 0 ] && ok "$name: none failed or dropped" || fail "$name: failed or dropped: $line"
	[ "$requests" -eq "$1" ] && ok "$name: the server saw every upload" || fail "$name: server saw $requests requests for $1 uploads"
	[ "$connects" -ge 1 ] && ok "$name: uploads went through the proxy" || fail "$name: no tunnel through the proxy"
}

stress command "$H/host_envstress" "$secs"
# The echo keeps sh from exec'ing it in place (an image exec'd in the
# tree) and says how it ended.
stress "exec'd image" sh -c "\"$H/host_envstress\" $secs; echo \"envstress status \$?\""
done_tests
