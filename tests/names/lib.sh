# SPDX-License-Identifier: Apache-2.0
# lib.sh - helpers of the names tests, sourced by test_*.sh
# after ../cli/lib.sh's set-up (scratch directory $T, fail/ok/done_tests).
#
#   profile DIR OPTS... -- CMD ARGS...   runs CMD under `emberprof run -q`
#                                         writing to DIR; then DIR.raw holds
#                                         `go tool pprof -raw` of every
#                                         profile, DIR.firstmaps the first
#                                         mapping line of each
. "$(dirname "$0")/../cli/lib.sh"

command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }

pprof_raw() {
	HOME=$T GOCACHE=$T/gocache go tool pprof -raw "$1"
}

profile() {
	pr_dir=$1
	shift
	"$EMBERPROF" run -q -o "$pr_dir" "$@" >"$pr_dir.out" 2>"$pr_dir.err"
	pr_rc=$?
	if [ "$pr_rc" -ne 0 ]; then
		fail "emberprof run $*: exit $pr_rc"
		sed 's/^/    /' "$pr_dir.err" >&2
	fi
	: >"$pr_dir.raw"
	: >"$pr_dir.firstmaps"
	pr_n=0
	for f in "$pr_dir"/*.pb.gz; do
		[ -e "$f" ] || continue
		pr_n=$((pr_n + 1))
		if ! pprof_raw "$f" >"$pr_dir.one" 2>"$pr_dir.perr"; then
			fail "go tool pprof cannot read $(basename "$f"):"
			sed 's/^/    /' "$pr_dir.perr" >&2
			continue
		fi
		cat "$pr_dir.one" >>"$pr_dir.raw"
		printf '%s ' "$(basename "$f")" >>"$pr_dir.firstmaps"
		sed -n '/^Mappings/{n;p;}' "$pr_dir.one" >>"$pr_dir.firstmaps"
	done
	if [ "$pr_n" -eq 0 ]; then
		fail "no profile written by emberprof run $*"
		sed 's/^/    /' "$pr_dir.err" >&2
	fi
	return 0
}

# function_names RAW : the function names of a raw dump's locations, one
# a line: each location line "ID: 0xADDR M=N NAME FILE:LINE s=N" and each
# inlined frame's line "NAME FILE:LINE s=N", without the rest.
function_names() {
	sed -n '/^Locations/,/^Mappings/{
		/^Locations/d
		/^Mappings/d
		s/^ *[0-9]*: 0x[0-9a-f]* M=[0-9]* //
		s/^ *//
		s/ [^ ]*:[0-9]* s=[0-9]*$//
		p
	}' "$1"
}

# check_first_mapping WHAT DIR PROGRAM : mapping 1 of every profile in DIR
# (profile's DIR.firstmaps) is PROGRAM.
check_first_mapping() {
	cf_bad=$(grep -v " $3 " "$2.firstmaps" | grep -v "^$" || true)
	if [ -n "$cf_bad" ]; then
		fail "$1: mapping 1 is not $3 in:"
		echo "$cf_bad" | sed 's/^/    /' >&2
	else
		ok "$1: mapping 1 is $3 in all $(wc -l <"$2.firstmaps") profiles"
	fi
}

# minidebuginfo FULL OUT : OUT is FULL stripped the way Fedora's
# find-debuginfo strips every package's binaries (its add_minidebug): the
# function symbols not already in .dynsym, in a mini ELF without debug
# sections, xz'd into .gnu_debugdata of the stripped binary. Leaves
# $T/keep_symbols (those symbols) and $T/stripped (FULL stripped, without
# .gnu_debugdata).
minidebuginfo() {
	objcopy --only-keep-debug "$1" "$T/debug"
	nm -D "$1" --format=posix --defined-only | awk '{ print $1 }' | sort >"$T/dynsyms"
	nm "$T/debug" --format=posix --defined-only |
		awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' | sort >"$T/funcsyms"
	comm -13 "$T/dynsyms" "$T/funcsyms" >"$T/keep_symbols"
	objcopy -S --remove-section .gdb_index --remove-section .comment \
		--keep-symbols="$T/keep_symbols" "$T/debug" "$T/mini_debuginfo"
	xz -f "$T/mini_debuginfo"
	strip --strip-all -R .comment "$1" -o "$T/stripped"
	objcopy --add-section .gnu_debugdata="$T/mini_debuginfo.xz" "$T/stripped" "$2"
}
