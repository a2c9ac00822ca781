# test_plt.sh - a call through the PLT, sampled in the stub itself, is
# named "fx_nop@plt" (as perf and objdump name it), never `_init` (of the
# module the stub is in) or another symbol below .plt; the classic lazy .plt and IBT's .plt.sec.
. "$(dirname "$0")/lib.sh"
for prog in "$EMBER_NAMES_PROG" "$EMBER_NAMES_PROG_IBT"; do
	b=$(basename "$prog")
	profile "$T/$b" --rate 1000 -- "$prog" plt 1.5
	check_grep "$b" "$T/$b.raw" " fx_nop@plt "
	check_grep "$b" "$T/$b.raw" " fx_nop "
	# _init of the modules that call through the PLT: the program and
	# libember_names_fx. Another library's own _init may be sampled in
	# earnest (the loader calling it, a page fault on its first
	# instruction, sampled with kernel time by the tree engine).
	awk -v prog="$prog" '
		/^PeriodType:/ { delete init; sec = "" }
		/^Locations/ { sec = "L"; next }
		/^Mappings/ { sec = "M"; next }
		sec == "L" && / _init / { if (match($0, /M=[0-9]+/)) init[substr($0, RSTART + 2, RLENGTH - 2)] = 1 }
		sec == "M" && $1 ~ /^[0-9]+:$/ {
			m = $1; sub(":", "", m)
			if (init[m] && ($3 == prog || $3 ~ /libember_names_fx/)) print "_init in " $3
		}' "$T/$b.raw" >"$T/$b.init"
	check_no_grep "$b: its own modules" "$T/$b.init" "_init"
	check_no_grep "$b" "$T/$b.raw" " .plt "
done
done_tests
