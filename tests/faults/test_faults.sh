# SPDX-License-Identifier: Apache-2.0
# test_faults.sh - fault injection in the agent's threads, as
# curl's torture tests do: every allocation, open, write and mmap call
# site of the agent's threads is made to fail once, in its own run of
# faults_prog under `emberprof run` (local reporter), with the errno a real
# failure would have (ENOMEM, EMFILE and EACCES, ENOSPC, ENOMEM).
#
# 1. A run with libember_faults.so in count mode lists the call sites the
#    agent's threads reach (function + innermost return address inside
#    libemberprof, see ember_faults.c), K of them.
# 2. One run per site (opens twice: EMFILE, then EACCES) fails the first
#    call at that site. Every run must leave the program unaware: exit
#    status 0 and the same stdout as without emberprof, no crash, no hang
#    (timeout). Every profile written must be valid for go tool pprof.
#    And the fault must show: either the agent logged it (a line naming
#    the error: "out of memory", strerror's text), or it recovered
#    completely (every profile type written, valid, the workload's hot
#    function burn_faults under its name, no report failure). A fault that
#    is neither is a defect of the agent.
#
# Which calls: not a stride over call numbers but every call site once,
# the first call there (a site reached once at start-up is as likely to
# hide a defect as a busy one). A site is the wrapped function and the
# innermost EMBER_FAULTS_DEPTH return addresses inside libemberprof: 1 in
# CI (~100 sites in cpu mode, about 2 minutes on an idle 2-core machine),
# 2 by hand (~140 sites: tells apart the callers of helpers such as
# ember__write_all). Each later mode runs only the sites the earlier ones
# did not have (the wall-clock thread's, the upload thread's). Which sites are reached depends a
# little on timing (a window more or less), so a site not reached in its
# run is counted, not failed.
#
# A failure inside elfutils (the failed call made by libdw or libelf on
# the agent's behalf) is no exception: elfutils 0.188 does not survive
# ENOMEM everywhere, and the agent's guard (src/symbols/elfguard.h) must
# keep that from the program like any other failure (README.md).
#
# EMBER_FAULTS_MODES (default "cpu wall spool elfutils") chooses the runs:
# elfutils is cpu's run with every allocation site inside libdw and
# libelf told apart (ember_faults.c, EMBER_FAULTS_ELFUTILS), cpu is
# the default engine only, wall adds --wall (the wall-clock thread), spool
# adds --server with a port that refuses connections and a spool
# directory (the upload thread, libcurl, the spool: every window must be
# in the spool as well as in the output directory, or the loss logged).
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"

case "${EMBER_TEST_SANITIZE:-OFF}" in
ON | on | 1 | TRUE | true)
	echo "skipped in the sanitizer build: libember_faults.so defines malloc, which must not sit behind AddressSanitizer's allocator"
	exit 77
	;;
esac
need go timeout addr2line python3
: "${EMBER_FAULTS_LIB:?}" "${EMBER_FAULTS_PROG:?}" "${EMBER_NOALLOC_LIB:?}"
export HOME=$T GOCACHE=$T/gocache
EMBER_FAULTS_DEPTH=${EMBER_FAULTS_DEPTH:-1}
export EMBER_FAULTS_DEPTH
: >sites.done
# A TCP port on 127.0.0.1 that refuses connections (bound, then closed).
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')

mkdir work
"$EMBER_FAULTS_PROG" work >ref.out 2>ref.err
check_exit "faults_prog alone" 0 $?

# run MODE : one profiled run into prof/, stdout to out, stderr to err,
# status in $rc. The faults library's settings come from the environment.
run() {
	case $1 in
	cpu) set -- ;;
	elfutils) set -- ;; # cpu's run, elfutils' sites apart (below)
	wall) set -- --wall ;;
	spool)
		set -- --server "http://127.0.0.1:$port"
		export EMBERPROF_SERVER_SPOOL_DIR="$T/spool"
		;;
	esac
	# A cold unwind-table cache in every run: its stores (open, write,
	# rename) are call sites like any other.
	rm -rf prof spool "$T/utab"
	LD_PRELOAD=$EMBER_FAULTS_LIB EMBER_FAULTS_LOG=$T/rec EMBERPROF_UNWIND_CACHE=$T/utab \
		timeout -k 5 120 "$EMBERPROF" run -q -i 200ms --rate 250 "$@" --log-level info \
		-o prof -- "$EMBER_FAULTS_PROG" work >out 2>err
	rc=$?
	unset EMBERPROF_SERVER_SPOOL_DIR
}

# valid_profiles MODE : every profile written is valid for go tool pprof;
# sets $types (profile types written) and $named (burn_faults appears).
valid_profiles() {
	types=
	named=yes
	bad=0
	for kind in cpu wall; do
		if [ $kind = cpu ]; then
			files=$(ls prof 2>/dev/null | grep '\.pb\.gz$' | grep -v '\.wall\.pb\.gz$' | sed 's|^|prof/|')
		else
			files=$(ls prof 2>/dev/null | grep '\.wall\.pb\.gz$' | sed 's|^|prof/|')
		fi
		[ -n "$files" ] || continue
		types="$types $kind"
		# shellcheck disable=SC2086
		if ! go tool pprof -raw $files >raw 2>rawerr; then
			bad=1
			sed 's/^/    /' rawerr >&2
		fi
		grep -q burn_faults raw || named=no
	done
	# Spool mode: each window the output directory has, the spool has.
	if [ "$1" = spool ]; then
		n=$(ls spool 2>/dev/null | grep -c '\.ems$')
		[ "$n" -eq "$(ls prof | grep -c '\.pb\.gz$')" ] || types="$types spool-short($n)"
	fi
	return $bad
}

# name_of SITE : the agent's functions at SITE (lib+0xoff<0xoff...), the
# innermost first.
name_of() {
	set -- "${1#*@}" # the agent's frames of an elfutils site
	lib=${1%%+*}
	case $lib in
	libemberprof_noalloc.so*) path=$EMBER_NOALLOC_LIB ;;
	*) echo "?"; return ;;
	esac
	echo "${1#*+}" | tr '<' '\n' | addr2line -f -s -e "$path" 2>/dev/null |
		awk 'NR % 2 == 1 { f = $0 } NR % 2 == 0 { printf "%s%s (%s)", sep, f, $0; sep = " < " }'
}

for mode in ${EMBER_FAULTS_MODES:-cpu wall spool elfutils}; do
	# elfutils: each allocation site inside libdw and libelf reached on the
	# agent's behalf (their two innermost frames, ember_faults.c) fails
	# once; the earlier modes failed only the first call under each of the
	# agent's own call sites.
	if [ $mode = elfutils ]; then
		export EMBER_FAULTS_ELFUTILS=2
	else
		unset EMBER_FAULTS_ELFUTILS
	fi
	# 1. Which sites the agent's threads reach.
	rm -f rec
	EMBER_FAULTS_MODE=count run $mode
	check_exit "$mode: count run" 0 $rc
	valid_profiles $mode || fail "$mode: count run wrote invalid profiles"
	base_types=$types
	[ -n "$base_types" ] || { fail "$mode: count run wrote no profile"; cat err >&2; continue; }
	case $base_types in
	*spool-short*) fail "$mode: count run: not every window reached the spool ($base_types)" ;;
	esac
	calls=$(grep -c '^call ' rec)
	awk '$1 == "call" && !seen[$2 " " $3]++ { print $2, $3 }' rec >sites.all
	if [ $mode = elfutils ]; then
		grep '@' sites.all | grep -vxF -f sites.done >sites.$mode
	else
		grep -vxF -f sites.done sites.all >sites.$mode
	fi
	cat sites.$mode >>sites.done
	k=$(wc -l <sites.all)
	echo "$mode: $calls calls of the agent's threads at $k sites, $(wc -l <sites.$mode) not run before (profiles:$base_types)"
	awk '{ n[$2]++ } END { for (f in n) printf "    %-14s %d sites\n", f, n[f] }' sites.$mode | sort
	[ "$k" -gt 0 ] || fail "$mode: no call of the agent's threads seen (is the agent's thread named emberprof?)"

	# 2. Each site fails once.
	injected=0 logged=0 recovered=0 unreached=0
	while read -r fn site; do
		case $fn in
		open | open64 | openat | openat64 | creat | fopen | fopen64) errs="24 13" ;; # EMFILE EACCES
		*) errs=0 ;; # the call's own: ENOMEM, ENOSPC
		esac
		for e in $errs; do
			rm -f rec
			EMBER_FAULTS_MODE=fail EMBER_FAULTS_FN=$fn EMBER_FAULTS_SITE=$site EMBER_FAULTS_ERRNO=$e \
				run $mode </dev/null
			what="$mode: $fn at $site ($(name_of "$site"))"
			[ "$e" = 0 ] || what="$what, errno $e"
			if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
				fail "$what: hang (killed by timeout)"
				continue
			fi
			if [ $rc -ne 0 ] || ! cmp -s out ref.out; then
				fail "$what: the program noticed: exit $rc, stdout:"
				sed 's/^/    /' out err >&2
				grep '^crash' rec >&2
				continue
			fi
			if ! grep -q '^injected ' rec 2>/dev/null; then
				unreached=$((unreached + 1))
				continue
			fi
			injected=$((injected + 1))
			errno=$(awk '$1 == "injected" { print $4; exit }' rec)
			valid=yes
			valid_profiles $mode || valid=no
			[ $valid = yes ] || fail "$what: invalid profile written"
			case $errno in
			# pthread_create reports its own lack of memory as EAGAIN (POSIX).
			12) pat='out of memory|cannot allocate memory|start the .*: resource temporarily unavailable' ;;
			24) pat='too many open files' ;;
			13) pat='permission denied' ;;
			28) pat='no space left on device' ;;
			*) pat='no such pattern' ;;
			esac
			if line=$(grep -v '^faults_prog' err | grep -iE -m1 "$pat"); then
				logged=$((logged + 1))
				ok "$what: logged: $line"
			elif [ $valid = yes ] && [ "$types" = "$base_types" ] && [ $named = yes ] &&
				grep -q ' 0 report failures' err; then
				recovered=$((recovered + 1))
				ok "$what: recovered, nothing lost"
			else
				fail "$what: neither logged nor recovered (profiles:${types:- none}, burn_faults named: $named)"
				sed 's/^/    /' err >&2
			fi
		done
	done <sites.$mode
	echo "$mode: $injected faults injected: $logged logged, $recovered recovered without loss; $unreached sites not reached in their run"
	[ "$injected" -gt 0 ] || fail "$mode: no fault was injected"
done

done_tests
