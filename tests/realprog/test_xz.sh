# test_xz.sh - xz -T2: liblzma's workers start with every signal blocked.
. "$(dirname "$0")/lib.sh"
need xz
awk 'BEGIN { x = 7; for (i = 0; i < 300000; i++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%d %x line\n", x % 1000, x } }' >"$T/big"
realprog xz -- xz -3 -T2 -c "$T/big"
# The workers' CPU is in the profiles, in liblzma: its internal functions
# have no names (stripped library), and the one exported entry point,
# lzma_code, is on the main thread's stack only, which takes a few samples
# at most (before their modules' unwind tables are built, often): so the
# check is on the CPU profiles' share of the library's (unnamed) frames.
for mode in default rate alloc; do
	for f in "$T/xz/prof-$mode"/*.pb.gz; do
		case $f in *.wall.pb.gz | *.memory.pb.gz | *.alloc.pb.gz) continue ;; esac
		[ -e "$f" ] || continue
		share=$(go tool pprof -top "$f" 2>/dev/null |
			awk '/liblzma/ { gsub("%", "", $5); s += $5 } END { print int(s + 0.5) }')
		if [ "${share:-0}" -ge 50 ]; then
			ok "xz [$mode]: $(basename "$f"): ${share}% of the samples pass through liblzma"
		else
			fail "xz [$mode]: $(basename "$f"): only ${share:-0}% of the samples pass through liblzma"
		fi
	done
done
done_tests
