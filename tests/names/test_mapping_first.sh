# test_mapping_first.sh - mapping 1 of every profile written (CPU, wall,
# memory) is the main executable, though the program's time and
# allocations are all in a library: `go tool pprof` prints mapping 1 as
# the "File:" and Grafana Pyroscope takes mapping[0] as the binary.
. "$(dirname "$0")/lib.sh"
profile "$T/m" --rate 1000 --wall --alloc -i 1s -- "$EMBER_NAMES_PROG" alloc 1.5
n=$(wc -l <"$T/m.firstmaps")
if [ "$n" -lt 3 ]; then
	fail "mapping 1: only $n profiles; expected CPU, wall and memory ones"
fi
for kind in cpu wall memory; do
	grep -q "$kind" "$T/m.firstmaps" 2>/dev/null || true
done
bad=$(grep -v " $EMBER_NAMES_PROG " "$T/m.firstmaps" | grep -v "^$" || true)
if [ -n "$bad" ]; then
	fail "mapping 1 is not $EMBER_NAMES_PROG in:"
	echo "$bad" | sed 's/^/    /' >&2
else
	ok "mapping 1 is the program in all $n profiles"
fi
ls "$T/m" >"$T/m.files"
check_grep "memory profile written" "$T/m.files" ".memory.pb.gz"
check_grep "wall profile written" "$T/m.files" "wall"
done_tests
