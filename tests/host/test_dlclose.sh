# SPDX-License-Identifier: Apache-2.0
# test_dlclose.sh - plugins dlopen'ed, run and dlclose'd between two drains
# of the agent are named (libemberprof.so's dlclose wrapper records each
# library before it is unmapped: src/symbols/dlclosed.h).
#
# The agent drains only once a minute here (the test knob
# EMBERPROF_DRAIN_INTERVAL) and the window is an hour, so the first drain
# is the one at exit, when both plugins are long gone: without the
# journal their samples have no names, whatever the machine's load (a run
# that crosses a full hour, where the window's end makes a drain, is run
# again). Read in `go tool pprof -raw`: each plugin's function must be the
# leaf of samples, under its own name and mapping.
#
# Then a plugin whose file is deleted, and one whose file is replaced by
# another library (another build id), before the dlclose: the agent cannot
# read them, their samples stay unnamed (never named after the other
# library), and the stop log counts the unreadable file.
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"
need go readelf

# leaf_samples PROFILE FUNCTION: the CPU (ms) of samples whose leaf frame
# is FUNCTION (their weights, not their count: on a loaded machine the
# kernel checks the CPU timers late and one sample stands for several
# periods, limits.md), as
# the profile names them (-symbolize=none: pprof would otherwise name the
# frames itself from the file at the mapping's path, whatever its build id)
leaf_samples() {
	HOME=$T GOCACHE=$T/gocache go tool pprof -symbolize=none -raw "$1" 2>/dev/null | awk -v f="$2" '
		/^Samples:/ { sec = "S"; next }
		/^Locations/ { sec = "L"; next }
		/^Mappings/ { sec = "M"; next }
		sec == "S" && $2 ~ /^[0-9]+:$/ { n++; v = $2; sub(":", "", v); cnt[n] = v; leaf[n] = $3 }
		sec == "L" && $1 ~ /^[0-9]+:$/ { id = $1; sub(":", "", id); fn[id] = $4 }
		END { s = 0; for (i = 1; i <= n; i++) if (fn[leaf[i]] == f) s += cnt[i]; printf "%d\n", (s + 999999) / 1e6 }'
}

# run NAME ARGS...: the program under `emberprof run`, hour crossings retried
run() {
	name=$1
	shift
	for try in 1 2; do
		rm -rf "$name"
		h0=$(date -u +%Y%m%d%H)
		EMBERPROF_DRAIN_INTERVAL=60s "$EMBERPROF" run -q --log-level info -i 60m -o "$name" -- \
			"$H/host_dlclose" "$@" >"$name.out" 2>"$name.err"
		rc=$?
		[ "$(date -u +%Y%m%d%H)" = "$h0" ] && break
		echo "note: $name crossed a full hour (a window end, hence a drain): again"
	done
	return $rc
}

P1=$H/dlplug_one.so
P2=$H/dlplug_two.so
run both 0.3 "$P1" dlplug_one_burn "$P2" dlplug_two_burn
check_exit "two plugins" 0 $?
grep -E "dlplug|dlclose'd|could not be read" both.err
prof=$(ls both/*.pb.gz 2>/dev/null | head -n 1)
if [ -z "$prof" ]; then
	fail "two plugins: no profile written"
	cat both.err >&2
else
	for fn in dlplug_one_burn dlplug_two_burn; do
		n=$(leaf_samples "$prof" $fn)
		# 0.3 s of CPU each (a third of it at least: the rest may be
		# in frames around the loop)
		if [ "${n:-0}" -ge 100 ]; then
			ok "two plugins: $n ms of CPU named $fn"
		else
			fail "two plugins: ${n:-0} ms of CPU named $fn, expected about 300"
		fi
	done
	HOME=$T GOCACHE=$T/gocache go tool pprof -symbolize=none -raw "$prof" 2>/dev/null >both.raw
	check_grep "two plugins: dlplug_one.so's mapping" both.raw "$P1"
	check_grep "two plugins: dlplug_two.so's mapping" both.raw "$P2"
fi
check_grep "two plugins: both dlcloses recorded" both.err "dlclose'd libraries: 2 recorded"
check_grep "two plugins: nothing dropped" both.err "0 not recorded (journal full), 0 not recordable"

# Deleted before its dlclose: no names, the file counted as unreadable.
cp "$P1" gone.so
run deleted -u 0.3 "$T/gone.so" dlplug_one_burn
check_exit "deleted plugin" 0 $?
prof=$(ls deleted/*.pb.gz 2>/dev/null | head -n 1)
n=$([ -n "$prof" ] && leaf_samples "$prof" dlplug_one_burn)
if [ -n "$prof" ] && [ "${n:-0}" -eq 0 ]; then ok "deleted plugin: no name"; else fail "deleted plugin: profile '$prof', ${n:-?} ms named"; fi
check_grep "deleted plugin: counted as unreadable" deleted.err "could not be read for symbols"
if grep -q "could not be read for symbols.*gone.so" deleted.err; then
	ok "deleted plugin: the file named in the log"
else
	fail "deleted plugin: no log line naming gone.so as unreadable"
fi

# Replaced by another library (dlplug_two.so) before its dlclose: its build
# id differs from the recorded one, the agent refuses the file: no names,
# never the other's; the mapping keeps the build id of the code that ran.
cp "$P1" swapped.so
cp "$P2" other.so
run replaced -r "$T/other.so" 0.3 "$T/swapped.so" dlplug_one_burn
check_exit "replaced plugin" 0 $?
prof=$(ls replaced/*.pb.gz 2>/dev/null | head -n 1)
n1=$([ -n "$prof" ] && leaf_samples "$prof" dlplug_one_burn)
n2=$([ -n "$prof" ] && leaf_samples "$prof" dlplug_two_burn)
if [ -n "$prof" ] && [ "${n1:-0}" -eq 0 ] && [ "${n2:-0}" -eq 0 ]; then
	ok "replaced plugin: no name, not the other library's"
else
	fail "replaced plugin: profile '$prof', ${n1:-?} ms named dlplug_one_burn, ${n2:-?} dlplug_two_burn"
fi
check_grep "replaced plugin: counted as unreadable" replaced.err "its build id differs"
id=$(readelf -n "$P1" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
if [ -n "$prof" ] && [ -n "$id" ] &&
	HOME=$T GOCACHE=$T/gocache go tool pprof -symbolize=none -raw "$prof" 2>/dev/null | grep "swapped.so" | grep -q "$id"; then
	ok "replaced plugin: the mapping has the dlclose'd library's build id $id"
else
	fail "replaced plugin: the mapping lacks build id '$id'"
fi
done_tests
