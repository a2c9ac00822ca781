# test_plt.sh - a call through the PLT, sampled in the stub itself, is
# named "fx_nop@plt" (as perf and objdump name it), never `_init` or
# another symbol below .plt; the classic lazy .plt and IBT's .plt.sec.
. "$(dirname "$0")/lib.sh"
for prog in "$EMBER_NAMES_PROG" "$EMBER_NAMES_PROG_IBT"; do
	b=$(basename "$prog")
	profile "$T/$b" --rate 1000 -- "$prog" plt 1.5
	check_grep "$b" "$T/$b.raw" " fx_nop@plt "
	check_grep "$b" "$T/$b.raw" " fx_nop "
	check_no_grep "$b" "$T/$b.raw" " _init "
	check_no_grep "$b" "$T/$b.raw" " .plt "
done
done_tests
