# SPDX-License-Identifier: Apache-2.0
# test_preload.sh - libemberprof.so preloaded by hand: it does nothing
# unless asked, profiles with EMBERPROF_OUTPUT_DIR, and on a bad setting
# says so once on stderr while the program runs on unprofiled with its own
# exit status and an untouched stdout.
. "$(dirname "$0")/lib.sh"
: "${EMBER_DEMO:?EMBER_DEMO must name the demo executable}"

lib="${EMBER_TEST_LIB:-$EMBER_TEST_BINDIR/libemberprof.so}"
if [ ! -e "$lib" ]; then
	fail "no $lib"
	done_tests
fi
preload="${LD_PRELOAD:+$LD_PRELOAD:}$lib"

# Not asked to profile: silent, no files, stdout untouched.
LD_PRELOAD=$preload sh -c 'echo quiet; exit 3' >out 2>err; rc=$?
check_exit "no configuration" 3 $rc
check_grep "no configuration" out "quiet"
if [ -s err ]; then fail "no configuration: stderr not empty:"; cat err >&2; else ok "no configuration: silent"; fi

# Asked: a profile per window, named after the program.
EMBERPROF_OUTPUT_DIR=$T/prof LD_PRELOAD=$preload "$EMBER_DEMO" --threads 2 --seconds 1 >out 2>err; rc=$?
check_exit "EMBERPROF_OUTPUT_DIR" 0 $rc
n=$(ls prof 2>/dev/null | grep -c '^emberprof_demo-.*\.pb\.gz$')
if [ "$n" -ge 1 ]; then ok "EMBERPROF_OUTPUT_DIR: $n profile(s)"; else fail "EMBERPROF_OUTPUT_DIR: no emberprof_demo-*.pb.gz"; ls -la prof >&2; fi
"$EMBERPROF" top prof/*.pb.gz >top.out 2>&1; rc=$?
check_exit "the profile is readable" 0 $rc
check_no_grep "demo stdout is clean" out "emberprof: "

# A bad setting: one message, program unprofiled but running normally.
EMBERPROF_OUTPUT_DIR=$T/prof2 EMBERPROF_SAMPLE_RATE=lots LD_PRELOAD=$preload sh -c 'echo ran; exit 5' >out 2>err; rc=$?
check_exit "bad setting" 5 $rc
check_grep "bad setting" out "ran"
check_grep "bad setting" err "emberprof: "
check_grep "bad setting" err "EMBERPROF_SAMPLE_RATE"
lines=$(wc -l <err)
if [ "$lines" -eq 1 ]; then ok "bad setting: one line"; else fail "bad setting: $lines lines on stderr"; cat err >&2; fi

EMBERPROF_AUTOSTART=perhaps LD_PRELOAD=$preload sh -c 'exit 0' >out 2>err; rc=$?
check_exit "bad EMBERPROF_AUTOSTART" 0 $rc
check_grep "bad EMBERPROF_AUTOSTART" err "EMBERPROF_AUTOSTART"

# An output directory that cannot be created: reported, program unharmed.
: >plain
EMBERPROF_OUTPUT_DIR=$T/plain/sub LD_PRELOAD=$preload sh -c 'echo ran' >out 2>err; rc=$?
check_exit "bad output directory" 0 $rc
check_grep "bad output directory" out "ran"
check_grep "bad output directory" err "plain/sub"

done_tests
