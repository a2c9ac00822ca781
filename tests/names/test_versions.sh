# SPDX-License-Identifier: Apache-2.0
# test_versions.sh - a function defined under a symbol version
# (fx_vers@@FX_2 in the library's .symtab, as memcpy@@GLIBC_2.14 in
# libc's) is named fx_vers: no version in any function name.
. "$(dirname "$0")/lib.sh"
profile "$T/v" --rate 1000 -- "$EMBER_NAMES_PROG" vers 1
check_grep "versions" "$T/v.raw" " fx_vers "
function_names "$T/v.raw" >"$T/v.names"
# a PLT stub is named foo@plt (test_plt.sh): that '@' is no version.
# Only an ASan build, whose program calls __asan_init through its PLT,
# is likely to be caught in one here.
sed 's/@plt$//' "$T/v.names" >"$T/v.unversioned"
if grep -q '@' "$T/v.unversioned"; then
	fail "versions: a function name with '@':"
	grep '@' "$T/v.unversioned" | sort -u | sed 's/^/    /' >&2
else
	ok "versions: no '@' in $(wc -l <"$T/v.names") function names"
fi
# the library's .symtab does spell it with the version (else the test
# would prove nothing)
if command -v readelf >/dev/null 2>&1; then
	readelf -sW "$EMBER_NAMES_LIB" >"$T/lib.syms"
	check_grep "fixture .symtab" "$T/lib.syms" "fx_vers@@FX_2"
fi
done_tests
