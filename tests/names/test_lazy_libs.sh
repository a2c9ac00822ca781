# SPDX-License-Identifier: Apache-2.0
# test_lazy_libs.sh - which of elfutils' libraries the preloaded agent
# maps into a profiled program (util/dep_elfutils.h): libelf (which needs
# only zlib) for the unwind tables, an addresses-only profile and the names
# of modules without DWARF (symbols/symbolizer_elf.c); libdw, and with it
# liblzma and libbz2, only for lines, inline frames and MiniDebugInfo.
# maps_prog prints what its own /proc/self/maps shows once the agent has
# written a profile of its burn (maps_prog.c), so nothing here is timed.
#   - stripped of DWARF, keeping .symtab, and stripped to .dynsym: neither
#     --no-symbolize nor a symbolizing run maps libdw, liblzma or libbz2;
#     the symbolizing run names maps_inner/maps_outer as before (system
#     libraries are named from their symbols: their DWARF is not wanted);
#   - with DWARF: lines and the inlined maps_mix, libdw mapped;
#   - stripped the Fedora way (MiniDebugInfo): named from .gnu_debugdata,
#     libdw and liblzma mapped then.
. "$(dirname "$0")/lib.sh"
need objcopy nm strip xz readelf gcc
: "${EMBER_MAPS_PROG:?EMBER_MAPS_PROG must name maps_prog}"
: "${EMBER_TEST_SRCDIR:?EMBER_TEST_SRCDIR must name the source tree}"

cp "$EMBER_MAPS_PROG" "$T/dwarf"
strip --strip-debug "$T/dwarf" -o "$T/symtab"
# only .dynsym: the same source linked with -rdynamic (its functions
# exported), stripped of everything else
gcc -O2 -rdynamic "$EMBER_TEST_SRCDIR/tests/names/maps_prog.c" -o "$T/dyn_full" ||
	fail "cannot build the -rdynamic copy"
strip --strip-all "$T/dyn_full" -o "$T/dynsym"
for kind in symtab dynsym; do
	readelf -SW "$T/$kind" >"$T/$kind.sections"
	if grep -q -e ' \.debug_info ' -e ' \.gnu_debugdata ' "$T/$kind.sections"; then
		fail "fixture: $kind still has DWARF or MiniDebugInfo"
	fi
done
if grep -q ' \.symtab ' "$T/dynsym.sections"; then
	fail "fixture: dynsym still has a .symtab"
fi
check_grep "fixture: symtab keeps .symtab" "$T/symtab.sections" ".symtab"

# run NAME PROGRAM OPTS... : profiles PROGRAM into $T/NAME (not a file's
# name there); its report of
# what it mapped in $T/NAME.out, the function names in $T/NAME.names
run() {
	rn=$1
	rp=$2
	shift 2
	profile "$T/$rn" --rate 500 --interval 300ms "$@" -- "$rp" 300000
	check_grep "$rn: the program saw a profile of its burn" "$T/$rn.out" "waited: profile"
	function_names "$T/$rn.raw" | sort -u >"$T/$rn.names"
	echo "     $rn maps: $(sed -n 's/^mapped: //p' "$T/$rn.out" | tr '\n' ' ')"
}

for kind in symtab dynsym; do
	run "$kind-nosym" "$T/$kind" --no-symbolize
	for lib in libdw liblzma libbz2; do
		check_no_grep "$kind, --no-symbolize" "$T/$kind-nosym.out" "mapped: $lib"
	done
	run "$kind-sym" "$T/$kind"
	for lib in libdw liblzma libbz2; do
		check_no_grep "$kind, symbolizing" "$T/$kind-sym.out" "mapped: $lib"
	done
	check_grep "$kind named" "$T/$kind-sym.names" "maps_inner"
	check_grep "$kind named" "$T/$kind-sym.names" "maps_outer"
	check_no_grep "$kind: no inline frame without DWARF" "$T/$kind-sym.names" "maps_mix"
done

# With DWARF: file and line, and the inlined function.
run dwarf-run "$T/dwarf"
check_grep "dwarf named" "$T/dwarf-run.names" "maps_inner"
check_grep "dwarf: inline frame" "$T/dwarf-run.names" "maps_mix"
check_grep "dwarf: lines" "$T/dwarf-run.raw" "maps_prog.c:"
check_grep "dwarf: libdw loaded" "$T/dwarf-run.out" "mapped: libdw"

# MiniDebugInfo, made as find-debuginfo makes it (lib.sh).
minidebuginfo "$T/dwarf" "$T/mdi"
run mdi-run "$T/mdi"
check_grep "MiniDebugInfo named" "$T/mdi-run.names" "maps_inner"
check_grep "MiniDebugInfo: liblzma loaded" "$T/mdi-run.out" "mapped: liblzma"
check_grep "MiniDebugInfo: libdw loaded" "$T/mdi-run.out" "mapped: libdw"
done_tests
