# SPDX-License-Identifier: Apache-2.0
# test_flame.sh - `emberprof flame`, `emberprof diff` and `run --flame` on
# files written by `emberprof run` (pprof and JFR), and every kind of bad
# input: a clear message naming the file and the problem, exit 2, never a
# crash (in the sanitizer build too). The pages themselves are checked in a
# browser by tests/flame/browser_test.js.
. "$(dirname "$0")/lib.sh"
: "${EMBER_DEMO:?EMBER_DEMO must name the demo executable}"

"$EMBERPROF" run --flame --thread-labels --wall --format both -o prof --rate 500 -- "$EMBER_DEMO" --threads 2 --seconds 0.5 >demo.out 2>err
rc=$?
check_exit "run --flame" 0 $rc
check_grep "run --flame" err "flame graph: $T/prof/flame.html"
check_grep "run --flame" err "flame graph: $T/prof/wall.html"
check_grep "run --flame: a page" prof/flame.html "<canvas"
cpu=$(ls prof/*.pb.gz | grep -v wall | head -n 1)
wall=$(ls prof/*.wall.pb.gz | head -n 1)
jfr=$(ls prof/*.jfr | head -n 1)
if [ -z "$cpu" ] || [ -z "$wall" ] || [ -z "$jfr" ]; then
	fail "run wrote no cpu, wall or JFR file:"; ls prof >&2
	done_tests
fi

"$EMBERPROF" flame -o page.html prof/*.pb.gz >out 2>err; rc=$?
check_exit "flame of every window" 0 $rc
check_grep "flame" page.html '"hot_a"'
check_grep "flame: a type selector with both types" page.html '"wall"'
if grep -qE '(src|href)=|https?://' page.html; then fail "the page refers to something outside it"; else ok "flame: nothing outside the page"; fi

"$EMBERPROF" flame -o jfr.html "$jfr" >out 2>err; rc=$?
check_exit "flame of a JFR recording" 0 $rc
check_grep "flame of a JFR recording" jfr.html '"hot_a"'
"$EMBERPROF" flame -o mixed.html "$jfr" "$cpu" >out 2>err; rc=$?
check_exit "flame of JFR and pprof together" 0 $rc

# What `go tool pprof -proto` writes (Go's encoder), when go is there.
if command -v go >/dev/null 2>&1 && go tool pprof -proto "$cpu" >goproto.pb.gz 2>/dev/null; then
	"$EMBERPROF" flame -o go.html goproto.pb.gz >out 2>err; rc=$?
	check_exit "flame of go tool pprof -proto output" 0 $rc
	check_grep "flame of go tool pprof -proto output" go.html '"hot_a"'
fi

"$EMBERPROF" flame --folded --type cpu "$cpu" >folded 2>err; rc=$?
check_exit "--folded" 0 $rc
check_grep "--folded" folded "stage_one;hot_a "
if grep -vqE '^[^ ]+( [^ ]+)* [0-9]+$' folded; then fail "--folded: a line is not 'frames value'"; cat folded >&2; else ok "--folded: every line is 'frames value'"; fi
"$EMBERPROF" flame --folded --reverse --type cpu "$cpu" >rfolded 2>err
check_grep "--reverse" rfolded "hot_a;stage_one;"
"$EMBERPROF" flame --min 30 --title 'my "title"' -o min.html "$cpu" >out 2>err; rc=$?
check_exit "--min --title" 0 $rc
check_grep "--title is escaped" min.html 'my \"title\"'
# --min just above hot_b's share (from the folded stacks: the split varies
# with the machine's load) drops hot_b and keeps hot_a (3 times hot_b's).
# Its share is every stack through it: kernel frames may lie below it.
min=$(awk '{t += $NF} /;hot_b[; ]/{b += $NF} END {printf "%.3f", 100 * b / t + 0.01}' folded)
"$EMBERPROF" flame --folded --min "$min" --type cpu "$cpu" >mfolded 2>err
check_grep "--min $min keeps the big frames" mfolded "stage_one;hot_a "
check_no_grep "--min $min drops the small frames" mfolded "hot_b"

"$EMBERPROF" flame --where thread_name=emberprof_demo -o where.html "$cpu" >out 2>err; rc=$?
check_exit "--where thread_name=" 0 $rc
"$EMBERPROF" flame --where thread_name=nobody -o where.html "$cpu" >out 2>err; rc=$?
check_exit "--where matching nothing" 2 $rc
check_grep "--where matching nothing" err "has the --where labels"

# A recording of async-profiler itself (its native agent preloaded into the
# demo), when ASYNC_PROFILER_LIB names its libasyncProfiler.so.
if [ -n "${ASYNC_PROFILER_LIB:-}" ] && [ -f "$ASYNC_PROFILER_LIB" ] && [ "${EMBER_TEST_SANITIZE:-OFF}" != ON ]; then
	LD_PRELOAD="$ASYNC_PROFILER_LIB" ASPROF_COMMAND="start,event=cpu,interval=1ms,file=$T/asprof.jfr" \
		"$EMBER_DEMO" --threads 2 --seconds 0.5 >/dev/null 2>&1
	"$EMBERPROF" flame --folded asprof.jfr >afolded 2>err; rc=$?
	check_exit "flame of async-profiler's own JFR" 0 $rc
	check_grep "flame of async-profiler's own JFR" afolded "worker_main;stage_one;hot_a "
else
	echo "skip: async-profiler's own JFR (set ASYNC_PROFILER_LIB to its libasyncProfiler.so)"
fi

# ---- bad input: exit 2, the file and the problem named ----
: >empty.pb.gz
"$EMBERPROF" flame -o x.html empty.pb.gz >out 2>err; rc=$?
check_exit "an empty file" 2 $rc
check_grep "an empty file" err "'empty.pb.gz' is empty"

# A valid pprof with a sample type and no sample (string table "", cpu, nanoseconds).
printf '\012\004\010\001\020\002\062\000\062\003cpu\062\013nanoseconds' >nosamples.pb
"$EMBERPROF" flame -o x.html nosamples.pb >out 2>err; rc=$?
check_exit "a profile without samples" 2 $rc
check_grep "a profile without samples" err "'nosamples.pb' is empty: it has no samples"

head -c 200 "$cpu" >truncated.pb.gz
"$EMBERPROF" flame -o x.html truncated.pb.gz >out 2>err; rc=$?
check_exit "a truncated file" 2 $rc
check_grep "a truncated file" err "truncated.pb.gz"

head -c 300 "$jfr" >truncated.jfr
"$EMBERPROF" flame -o x.html truncated.jfr >out 2>err; rc=$?
check_exit "a truncated JFR" 2 $rc
check_grep "a truncated JFR" err "truncated.jfr"

"$EMBERPROF" flame -o x.html page.html >out 2>err; rc=$?
check_exit "a file of the wrong kind" 2 $rc
check_grep "a file of the wrong kind" err "page.html"

"$EMBERPROF" flame -o x.html missing.pb.gz >out 2>err; rc=$?
check_exit "a missing file" 2 $rc
check_grep "a missing file" err "missing.pb.gz"

"$EMBERPROF" flame -o x.html prof >out 2>err; rc=$?
check_exit "a directory" 2 $rc
check_grep "a directory" err "is a directory"

"$EMBERPROF" flame --type nope -o x.html "$cpu" >out 2>err; rc=$?
check_exit "--type absent" 2 $rc
check_grep "--type absent" err "no sample type 'nope'"

"$EMBERPROF" flame -o /nonexistent/dir/x.html "$cpu" >out 2>err; rc=$?
check_exit "an unwritable output" 1 $rc

"$EMBERPROF" flame >out 2>err; rc=$?
check_exit "no files" 2 $rc
"$EMBERPROF" flame --min 200 "$cpu" >out 2>err; rc=$?
check_exit "--min 200" 2 $rc

# ---- diff ----
"$EMBERPROF" diff --base "$cpu" --new "$cpu" -o same.html --fail-above 0 >out 2>err; rc=$?
check_exit "diff of a profile with itself, --fail-above 0" 0 $rc
check_grep "diff" out "+0.00pp"
check_no_grep "diff of a profile with itself" out "significant  "

"$EMBERPROF" diff --base "$cpu" --new "$wall" -o x.html >out 2>err; rc=$?
check_exit "diff of different sample types" 2 $rc
check_grep "diff of different sample types" err "no sample type 'cpu'"
check_grep "diff of different sample types" err "$wall"

"$EMBERPROF" diff --base "$cpu" -o x.html >out 2>err; rc=$?
check_exit "diff without --new" 2 $rc
"$EMBERPROF" diff --base empty.pb.gz --new "$cpu" -o x.html >out 2>err; rc=$?
check_exit "diff with an empty base" 2 $rc
check_grep "diff with an empty base" err "empty.pb.gz"

"$EMBERPROF" run -q -o split -- "$EMBER_DEMO" --threads 2 --seconds 0.5 --split 10 >demo.out 2>err
"$EMBERPROF" diff --base split/*.pb.gz --new $(ls prof/*.pb.gz | grep -v wall) --type cpu -o shift.html --fail-above 5 >out 2>err; rc=$?
check_exit "diff --fail-above 5 of a 10/90 against a 75/25 demo" 3 $rc
check_grep "--fail-above" err "more than --fail-above 5"
check_grep "diff: hot_a grew significantly" out "significant  hot_a"

done_tests
