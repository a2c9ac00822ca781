# SPDX-License-Identifier: Apache-2.0
# test_longpolls_jfr.sh - the JFR side, against real JDK 17 recordings:
#  1. the JFR reader reads every event of a recording: its count per event
#     type equals `jfr summary`'s, and every jdk.ExecutionSample decodes a
#     stack whose frames all have method names (constant pools resolved);
#  2. `emberprof longpolls` on the recording of PollJfr.java, which emits
#     tokio.PollcatchV1 user events as async-profiler's pollcatch does:
#     the slow poll is listed with its duration (the event's payload
#     converted with the chunk's ticksPerSecond, so within 1% of what the
#     program measured) and the stack sampled in it (PollJfr.slowPoll),
#     and no sample of the other thread is attributed to it;
#  3. the reader reads emberprof's own recordings (`emberprof run --format
#     jfr` on the demo, CPU and wall): counts equal `jfr summary`'s, every
#     stack decodes.
# Skipped (77) when the JDK is missing (setup-deps.sh installs it).
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
: "${JFR_COUNT:?JFR_COUNT must name the jfr_count program}"
for t in java javac jfr; do
	command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
# The JVM is not instrumented: no sanitizer runtime for it.
nojvm() { env -u LD_PRELOAD "$@"; }

if ! nojvm javac -d . "$EMBER_TEST_SRCDIR/tests/pollcatch/PollJfr.java" 2>javac.err; then
	fail "javac:"; cat javac.err >&2; done_tests
fi
if ! nojvm java -XX:StartFlightRecording=filename=poll.jfr,settings=profile -cp . PollJfr 200 \
	>java.out 2>java.err; then
	fail "java:"; cat java.err >&2; done_tests
fi
measured=$(sed -n 's/^slow_ms=//p' java.out)

# 1. counts against jfr summary
nojvm jfr summary poll.jfr >summary.txt 2>&1 || { fail "jfr summary"; cat summary.txt >&2; }
awk 'NF == 3 && $1 ~ /^[a-z]+\.[A-Za-z0-9_.]+$/ && $2 ~ /^[0-9]+$/ && $2 > 0 && $1 != "jdk.CheckPoint" && $1 != "jdk.Metadata" { print $1, $2 }' \
	summary.txt | sort >theirs.txt
if "$JFR_COUNT" poll.jfr jdk.ExecutionSample >ours.raw 2>count.err; then
	grep -v ' stacks ' ours.raw | sort >ours.txt
	if [ -s theirs.txt ] && cmp -s ours.txt theirs.txt; then
		ok "reader: $(wc -l <ours.txt) event types, counts equal jfr summary's"
	else
		fail "reader: counts differ from jfr summary's:"
		diff ours.txt theirs.txt >&2
	fi
	check_grep "reader: stacks" ours.raw "jdk.ExecutionSample stacks ok"
else
	fail "jfr_count:"; cat count.err >&2
fi

# 2. longpolls
"$EMBERPROF" longpolls --min 50 poll.jfr >lp.txt 2>lp.err
check_exit "longpolls" 0 $?
got=$(awk '/^poll / { d = $3 } $1 == "PollJfr.slowPoll" && d != "" { print d; exit }' lp.txt)
if [ -z "$got" ]; then
	fail "no long poll names PollJfr.slowPoll:"; sed 's/^/    /' lp.txt >&2
elif awk -v g="$got" -v m="$measured" 'BEGIN { d = g - m; if (d < 0) d = -d; exit !(m > 0 && d <= 0.01 * m) }'; then
	ok "longpolls: poll of $got ms, the program measured $measured ms"
else
	fail "longpolls: poll of $got ms, the program measured $measured ms"
fi
check_no_grep "longpolls: the bystander thread" lp.txt "otherThreadWork"
# Polls under --min are left out: every poll listed lasted 50 ms or more
# by the program's own clock. A fastPoll (0.2 ms of work) is listed only
# when the machine stalled it that long, and then with its true length.
short=$(awk '/^ *poll [0-9]+:/ { if ($3 + 0 < 50) print }' lp.txt)
if [ -n "$short" ]; then
	fail "longpolls: polls under --min 50 listed: $short"
else
	ok "longpolls: no poll under --min 50 listed ($(grep -c '^ *poll [0-9]*:' lp.txt) listed)"
fi

# 3. our own recordings
if [ -n "${EMBER_DEMO:-}" ]; then
	"$EMBERPROF" run -q -o own --format jfr --wall on --rate 500 -- "$EMBER_DEMO" --threads 2 \
		--seconds 1 >demo.out 2>demo.err || { fail "emberprof run --format jfr:"; cat demo.err >&2; }
	n=0
	for f in own/*.jfr; do
		[ -e "$f" ] || continue
		n=$((n + 1))
		nojvm jfr summary "$f" | awk 'NF == 3 && $1 ~ /^[a-z]+\.[A-Za-z0-9_.]+$/ && $2 ~ /^[0-9]+$/ && $2 > 0 && $1 != "jdk.CheckPoint" && $1 != "jdk.Metadata" { print $1, $2 }' |
			sort >own-theirs.txt
		if "$JFR_COUNT" "$f" jdk.ExecutionSample >own.raw 2>own.err; then
			grep -v ' stacks ' own.raw | sort >own-ours.txt
			if [ -s own-theirs.txt ] && cmp -s own-ours.txt own-theirs.txt; then
				ok "own recording $(basename "$f"): counts equal jfr summary's ($(tr '\n' ' ' <own-ours.txt))"
			else
				fail "own recording $(basename "$f"): counts differ:"
				diff own-ours.txt own-theirs.txt >&2
			fi
			check_grep "own recording: stacks" own.raw "jdk.ExecutionSample stacks ok"
		else
			fail "jfr_count on $f:"; cat own.err >&2
		fi
	done
	[ $n -gt 0 ] && ok "own recordings: $n read" || fail "emberprof run wrote no .jfr"
fi

# a damaged recording: a clear error, not a crash
head -c 5000 poll.jfr >cut.jfr
"$EMBERPROF" longpolls cut.jfr >cut.out 2>cut.err
check_exit "truncated recording" 1 $?
check_grep "truncated recording" cut.err "JFR"
done_tests
