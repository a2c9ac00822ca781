# SPDX-License-Identifier: Apache-2.0
# test_minidebuginfo.sh - MiniDebugInfo: a binary stripped the way
# Fedora's find-debuginfo strips every package's binaries, with the
# function symbols that .dynsym lacks kept in .gnu_debugdata (an
# xz-compressed ELF holding a .symtab), has its local functions named. The
# same binary without that section (the control) has only placeholders.
. "$(dirname "$0")/lib.sh"
need objcopy nm strip xz readelf
: "${EMBER_MDI_PROG:?EMBER_MDI_PROG must name mdi_prog}"

cp "$EMBER_MDI_PROG" "$T/full"
minidebuginfo "$T/full" "$T/mdi_prog"
# the fixture is what it should be: no .symtab, a .gnu_debugdata holding
# the local functions
readelf -SW "$T/mdi_prog" >"$T/sections"
check_grep "fixture" "$T/sections" ".gnu_debugdata"
if grep -q ' \.symtab ' "$T/sections"; then
	fail "fixture: the stripped binary still has a .symtab"
fi
check_grep "fixture's kept symbols" "$T/keep_symbols" "mdi_inner"

profile "$T/m" --rate 1000 -- "$T/mdi_prog" 20000000
function_names "$T/m.raw" | sort -u >"$T/m.names"
check_grep "MiniDebugInfo" "$T/m.names" "mdi_inner"
check_grep "MiniDebugInfo" "$T/m.names" "mdi_outer"

# The control: without .gnu_debugdata nothing names them.
profile "$T/s" --rate 1000 -- "$T/stripped" 20000000
function_names "$T/s.raw" | sort -u >"$T/s.names"
if grep -q "mdi_" "$T/s.names"; then
	fail "control: the binary without .gnu_debugdata has names it cannot have"
else
	ok "control: no mdi_ names without .gnu_debugdata ($(grep -c 'stripped+0x' "$T/s.names") placeholders)"
fi
done_tests
