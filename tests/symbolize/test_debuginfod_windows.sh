# SPDX-License-Identifier: Apache-2.0
# test_debuginfod_windows.sh - debuginfod names in the profiles the tree
# engine reports while the run goes on, not only in the files named after
# it (docs/design/debuginfod.md, "Per window"): a stripped -O2 program
# whose debug file only a real debuginfod server (Debian's) has, run with
# --interval 1s, pushing each window to a Pyroscope server
# (tests/pyroscope/fake_pyroscope.py) and writing local files. The pushed
# profiles are never touched after they are sent, so their names can only
# come from the fetches made during the run: every pushed profile with the
# program's frames must have them all named, with the unstripped build's
# names; the same for a program that outlives the command (a daemon),
# whose windows the background emberprof reports. Counted, never timed:
# each window may wait for its fetch
# (EMBERPROF_DEBUGINFOD_WAIT, set high here) while sampling goes on.
# Skipped (77) where debuginfod is not installed, and outside the tree
# engine (symbolize_engine.test_debuginfod_windows runs it).
. "$(dirname "$0")/lib.sh"
need debuginfod
if [ "${EMBER_TEST_ENGINE:-}" != tree ]; then
	echo "names during the run are the tree engine's: see symbolize_engine.test_debuginfod_windows"
	exit 77
fi
FAKE=$EMBER_TEST_SRCDIR/tests/pyroscope/fake_pyroscope.py
[ -r "$FAKE" ] || { echo "no $FAKE"; exit 77; }

tab=$(printf '\t')
PPID_FAKE=
trap 'stop_server; [ -n "$PPID_FAKE" ] && kill "$PPID_FAKE" 2>/dev/null; rm -rf "$T"' EXIT

build_programs
mkdir -p srv
cp debug/sym_c.debug srv/
id=$(cat ids/sym_c)
export DEBUGINFOD_CACHE_PATH="$T/cache" XDG_CACHE_HOME="$T/xdg"
unset DEBUGINFOD_URLS
start_server

python3 "$FAKE" --dir "$T/recv" --port-file "$T/ports" --lifetime 280 >"$T/fake.log" 2>&1 &
PPID_FAKE=$!
i=0
while [ ! -s "$T/ports" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
read -r pport _ <"$T/ports" || { fail "the Pyroscope server did not start"; done_tests; }

# the reference: the unstripped build's names
"$EMBERPROF" run -q -o ref -- bin/sym_c 150000000 >/dev/null 2>ref.err
check_exit "the unstripped build" 0 $?
frames ref/*.pb.gz | grep "^$id" >ref.frames

# about 4 s of CPU: several 1 s windows
DEBUGINFOD_URLS=$URL EMBERPROF_DEBUGINFOD_WAIT=200000 "$EMBERPROF" run -q --interval 1s \
	--server "http://127.0.0.1:$pport" -o local -- stripped/sym_c 1200000000 >/dev/null 2>run.err
check_exit "run, stripped, --interval 1s, --server, DEBUGINFOD_URLS" 0 $?
sed 's/^/    /' run.err

# named: the file has the program's locations and every one has a name
count_named() { # DIR PATTERN: "WITH NAMED" over the files
	with=0 named=0
	for f in "$1"/$2; do
		[ -e "$f" ] || continue
		frames "$f" | grep "^$id" >one.frames
		[ -s one.frames ] || continue
		with=$((with + 1))
		grep -q "$tab-\$" one.frames || named=$((named + 1))
		cat one.frames >>"$(basename "$1").frames"
	done
	echo "$with $named"
}
# check_pushed WHO: every profile in $T/recv (at least 2) has all the
# program's frames named, as the unstripped build names them
check_pushed() {
	set -- "$1" $(count_named "$T/recv" '*.pb')
	echo "pushed by $1: $2 profile(s) with the program's frames, $3 with all of them named"
	if [ "$2" -ge 2 ] && [ "$3" -eq "$2" ]; then
		ok "every profile $1 pushed (not only the last) carries the names: $3 of $2"
	else
		fail "profiles $1 pushed, named: $3 of $2 (expected all, at least 2)"
	fi
	sort -u recv.frames >recv.sorted
	same_frames "$1: pushed profiles = the unstripped build" ref.frames recv.sorted 1
}
check_pushed "the run"
has_frame "pushed: the hot function with file and line" recv.sorted "${tab}sym_hot_loop [^ ]*sym_c\.c:[1-9]"

set -- $(count_named local '*.pb.gz')
if [ "$1" -ge 2 ] && [ "$2" -eq "$1" ]; then
	ok "every local file carries the names: $2 of $1"
else
	fail "local files named: $2 of $1"
fi
if [ -s "$T/cache/$id/debuginfo" ]; then
	ok "the debug file in libdebuginfod's cache"
else
	fail "no $T/cache/$id/debuginfo"
fi

# A program that outlives the command (a daemon): its windows are the
# background emberprof's, which fetches for them as the command's run
# does. The cache is emptied first: the names must come from the server.
rm -rf "$T/cache" recv.frames
mkdir -p "$T/recv.fg"
mv "$T"/recv/*.pb "$T/recv.fg/" 2>/dev/null
DEBUGINFOD_URLS=$URL EMBERPROF_DEBUGINFOD_WAIT=200000 "$EMBERPROF" run -q --interval 1s \
	--server "http://127.0.0.1:$pport" -o daemon -- \
	sh -c 'stripped/sym_c 1200000000 </dev/null >/dev/null 2>&1 &' >/dev/null 2>daemon.err
check_exit "run, a daemon outliving the command" 0 $?
sed 's/^/    /' daemon.err
bg=$(sed -n 's/.*by emberprof \([0-9]*\) in the background.*/\1/p' daemon.err)
if [ -n "$bg" ]; then
	ok "a background emberprof samples the daemon ($bg)"
	i=0
	# (not ours to reap: ended is gone or a zombie)
	running() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat")" != Z ]; }
	while running "$bg" && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
	running "$bg" && fail "the background emberprof $bg has not ended in 120 s"
else
	fail "no background emberprof said"
fi
before=$failures
check_pushed "the background emberprof"
[ "$failures" = "$before" ] || sed 's/^/    daemon.err: /' daemon.err
[ -s "$T/cache/$id/debuginfo" ] && ok "the background emberprof fetched the debug file" ||
	fail "the background emberprof did not fetch the debug file"
stop_server
done_tests
