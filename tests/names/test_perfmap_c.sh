# SPDX-License-Identifier: Apache-2.0
# test_perfmap_c.sh - JIT code named from the process's perf map
# (/tmp/perf-PID.map): names_prog generates two functions into an
# anonymous executable page and names them in its perf map (with
# malformed lines, and a stale name for the second function's place that
# a later line replaces); the second function's line is appended only
# after the first has run for 1.5 s of CPU, past the first 1 s window, so
# it is found only if the map is read again as it grows.
. "$(dirname "$0")/lib.sh"
case $(uname -m) in
x86_64 | aarch64) ;;
*) echo "no code generator in names_prog for $(uname -m): skipped"; exit 77 ;;
esac
profile "$T/j" --rate 1000 -i 1s --log-level info -- "$EMBER_NAMES_PROG" jit 1.5
check_grep "perf map" "$T/j.raw" " jit_fx_first loop "
check_grep "perf map, appended later" "$T/j.raw" " jit_fx_second "
check_no_grep "perf map, replaced line" "$T/j.raw" "jit_stale_name"
# their mapping is named after the map, as perf's report names the DSO
check_grep "JIT mapping" "$T/j.raw" "/tmp/perf-"
check_first_mapping "with JIT code" "$T/j" "$EMBER_NAMES_PROG"
# 4 malformed lines (names_prog.c), counted and said
check_grep "malformed lines counted" "$T/j.err" "malformed lines skipped"
if grep -q "perf map /tmp/perf-[0-9]*.map: 3 JIT symbols from [0-9]* bytes, 4 malformed lines skipped" "$T/j.err"; then
	ok "3 symbols, 4 malformed lines"
else
	fail "expected 3 JIT symbols and 4 malformed lines in the log:"
	grep "perf map" "$T/j.err" | sed 's/^/    /' >&2
fi
done_tests
