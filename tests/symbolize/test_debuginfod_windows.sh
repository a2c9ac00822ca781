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
# names. Counted, never timed: each window may wait for its fetch
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
set -- $(count_named "$T/recv" '*.pb')
echo "pushed: $1 profile(s) with the program's frames, $2 with all of them named"
if [ "$1" -ge 2 ] && [ "$2" -eq "$1" ]; then
	ok "every pushed profile (not only the last) carries the names: $2 of $1"
else
	fail "pushed profiles named: $2 of $1 (expected all, at least 2)"
fi
sort -u recv.frames >recv.sorted
same_frames "pushed profiles = the unstripped build" ref.frames recv.sorted 1
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
stop_server
done_tests
