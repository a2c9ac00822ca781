# SPDX-License-Identifier: Apache-2.0
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
# Windows end on wall-clock multiples of the window length, so a run that
# straddles one has a short window of a few samples (CI once: 3 samples,
# 1 in liblzma, 51 ms): the share is that of a mode's CPU profiles merged
# (go tool pprof merges the files it is given).
for mode in default rate alloc; do
	files=""
	for f in "$T/xz/prof-$mode"/*.pb.gz; do
		case $f in *.wall.pb.gz | *.memory.pb.gz | *.alloc.pb.gz) continue ;; esac
		[ -e "$f" ] || continue
		files="$files $f"
	done
	if [ -z "$files" ]; then
		fail "xz [$mode]: no CPU profile"
		continue
	fi
	# shellcheck disable=SC2086 # one argument per file
	share=$(go tool pprof -top $files 2>/dev/null |
		awk '/liblzma/ { gsub("%", "", $5); s += $5 } END { print int(s + 0.5) }')
	n=$(echo $files | wc -w)
	if [ "${share:-0}" -ge 50 ]; then
		ok "xz [$mode]: ${share}% of the samples of its $n CPU profile(s) pass through liblzma"
	else
		fail "xz [$mode]: only ${share:-0}% of the samples of its $n CPU profile(s) pass through liblzma"
	fi
done
done_tests
