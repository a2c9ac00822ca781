# SPDX-License-Identifier: Apache-2.0
# test_plt.sh - a call through the PLT, sampled in the stub itself, is
# named "fx_nop@plt" (as perf and objdump name it), never `_init` (of the
# module the stub is in) or another symbol below .plt; the classic lazy .plt and IBT's .plt.sec.
. "$(dirname "$0")/lib.sh"
for prog in "$EMBER_NAMES_PROG" "$EMBER_NAMES_PROG_IBT"; do
	b=$(basename "$prog")
	profile "$T/$b" --rate 1000 -- "$prog" plt 1.5
	check_grep "$b" "$T/$b.raw" " fx_nop@plt "
	check_grep "$b" "$T/$b.raw" " fx_nop "
	# _init, in the modules that call through the PLT (the program and
	# libember_names_fx), anywhere but its own first byte: a stub below
	# it misnamed. _init itself may be sampled in earnest: ld.so calls
	# it, and a page fault on its first instruction (the first byte of
	# the module's code) is sampled with kernel time by the tree engine.
	awk -v prog="$prog" '
		/^PeriodType:/ { delete init; sec = "" }
		/^Locations/ { sec = "L"; next }
		/^Mappings/ { sec = "M"; next }
		sec == "L" && / _init / && match($0, /M=[0-9]+/) {
			m = substr($0, RSTART + 2, RLENGTH - 2)
			init[m] = init[m] " " $2
		}
		sec == "M" && $1 ~ /^[0-9]+:$/ {
			m = $1; sub(":", "", m)
			if (!(m in init) || ($3 != prog && $3 !~ /libember_names_fx/))
				next
			start = $2; sub("/.*", "", start)
			n = split(init[m], a, " ")
			for (k = 1; k <= n; k++)
				if (a[k] != start)
					print "_init at " a[k] " in " $3 " (its code starts at " start ")"
		}' "$T/$b.raw" >"$T/$b.init"
	check_no_grep "$b: its own modules" "$T/$b.init" "_init"
	check_no_grep "$b" "$T/$b.raw" " .plt "
done
done_tests
