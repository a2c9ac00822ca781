# SPDX-License-Identifier: Apache-2.0
# lib.sh - the real-programs suite: runs a program nobody here
# wrote without emberprof and under `emberprof run` in three modes, and
# checks that nothing the program shows changed. Sourced by test_*.sh.
#
#   realprog NAME [-f] [-p] [-H 'HOT ...'] -- CMD ARGS...
#
# runs CMD once unprofiled, then under `emberprof run -q` in each mode
# (default: a plain run, the engine emberprof picks, the tree engine where
# perf events are permitted, unless EMBER_TEST_ENGINE names one; --rate
# 1000 --wall; --alloc: both the preloaded library's), and checks for each:
# - the exit status is the unprofiled one;
# - stdout is byte-for-byte the unprofiled one (compared by cksum), or with
#   -p the test's own check_output FILE MODE function passes (for output
#   that is not deterministic);
# - stderr is the unprofiled one plus exactly the "N profiles written to"
#   line `emberprof run -q` prints: any other line is agent output;
# - at least one profile was written and every one is read by
#   `go tool pprof -raw`;
# - every function named with -H appears in that mode's profiles (only
#   where the binary has symbols for it).
# -e allows no profile at all (a program that may use too little CPU for a
# sample; emberprof then says "no profiles were written to").
# Each mode's coverage is printed: the CPU its profiles hold (cpu profiles
# only, read by go tool pprof) over the CPU the program's tree used in that
# same run (user + system: what `emberprof run` waited for, read from its
# /proc/PID/stat cutime and cstime while it is a zombie, so emberprof's own
# work is not in it); in the default mode (what a user gets from a plain
# `emberprof run`) under 90 % fails. The denominator is the same run's
# because one run's CPU differs from the next by 15 % on a loaded machine;
# the unprofiled run's is printed beside it. -c PERCENT lowers the floor
# for a program whose CPU is not all its own to profile (none does yet).
# -f passes --follow-children. Each run is in a fresh working directory
# made by the test's own setup_dir DIR function, if it defines one.
# Extra options for every profiled run: REALPROG_OPTS.

. "$(dirname "$0")/../cli/lib.sh"

# An uninstrumented program under the sanitizer build gets libasan
# preloaded (cli/lib.sh): the JVM, node and the servers are not meant to
# run that way, and the suite's time is better spent in the normal build.
# EMBER_REALPROG_ASAN=1 runs it anyway.
case "${EMBER_TEST_SANITIZE:-OFF}" in
ON | on | 1 | TRUE | true)
	if [ "${EMBER_REALPROG_ASAN:-0}" != 1 ]; then
		echo "sanitizer build: the real-programs suite runs in the normal build (EMBER_REALPROG_ASAN=1 forces it)"
		exit 77
	fi
	;;
esac

command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }
RP_COVER=$(cd "$(dirname "$0")/../tree" && pwd)/tree_cover.py

# free_port : a TCP port nothing listens on now, on 127.0.0.1.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

realprog() {
	rp_name=$1
	shift
	rp_follow=
	rp_prop=0
	rp_empty=0
	rp_hot=
	rp_floor=90
	while [ $# -gt 0 ]; do
		case $1 in
		-c) rp_floor=$2; shift ;;
		-f) rp_follow=-f ;;
		-p) rp_prop=1 ;;
		-e) rp_empty=1 ;;
		-H) rp_hot=$2; shift ;;
		--) shift; break ;;
		esac
		shift
	done

	rp_dir=$T/$rp_name
	mkdir -p "$rp_dir/plain" "$rp_dir/warm"
	# One unprofiled run first, its results dropped: a program's first run
	# pays for cold caches (python's compiled modules written, files read
	# from disk) that later runs, profiled or not, do not; the coverage's
	# denominator is the second run's CPU.
	(cd "$rp_dir/warm" && { command -v setup_dir >/dev/null 2>&1 && setup_dir "$rp_dir/warm"; } ; "$@" >/dev/null 2>&1)
	(cd "$rp_dir/plain" && { command -v setup_dir >/dev/null 2>&1 && setup_dir "$rp_dir/plain"; } ; python3 "$RP_COVER" run "$rp_dir/plain.ru" -- "$@" >"$rp_dir/plain.out" 2>"$rp_dir/plain.err")
	rp_plain=$?
	if [ "$rp_prop" = 1 ]; then
		check_output "$rp_dir/plain.out" plain || fail "$rp_name: the unprofiled run's output fails its own check"
	fi

	for rp_mode in default rate alloc; do
		rp_env=
		case $rp_mode in
		default)
			rp_opts=
			# as a user runs it (cli/lib.sh asks for the library
			# unless a test engine is named)
			[ -z "${EMBER_TEST_ENGINE:-}" ] && rp_env="-u EMBERPROF_ENGINE"
			;;
		rate) rp_opts="--rate 1000 --wall" ;;
		alloc) rp_opts="--alloc" ;;
		esac
		rp_w=$rp_dir/$rp_mode
		mkdir -p "$rp_w"
		(cd "$rp_w" && { command -v setup_dir >/dev/null 2>&1 && setup_dir "$rp_w"; } ;
			env $rp_env python3 "$RP_COVER" run "$rp_dir/$rp_mode.ru" -- "$EMBERPROF" run -q $rp_follow $rp_opts ${REALPROG_OPTS:-} -o "$rp_dir/prof-$rp_mode" -- "$@" \
				>"$rp_dir/$rp_mode.out" 2>"$rp_dir/$rp_mode.err")
		rp_rc=$?
		rp_what="$rp_name [$rp_mode${rp_follow:+ -f}]"
		check_exit "$rp_what" "$rp_plain" "$rp_rc"

		if [ "$rp_prop" = 1 ]; then
			if check_output "$rp_dir/$rp_mode.out" "$rp_mode"; then
				ok "$rp_what: output passes its check"
			else
				fail "$rp_what: output fails its check:"
				head -20 "$rp_dir/$rp_mode.out" | sed 's/^/    /' >&2
			fi
		elif [ "$(cksum <"$rp_dir/plain.out")" = "$(cksum <"$rp_dir/$rp_mode.out")" ]; then
			ok "$rp_what: same output ($(wc -c <"$rp_dir/plain.out") bytes)"
		else
			fail "$rp_what: output differs from the unprofiled run's:"
			diff "$rp_dir/plain.out" "$rp_dir/$rp_mode.out" | head -20 | sed 's/^/    /' >&2
		fi

		# stderr: the program's own, plus the one line -q prints
		rp_line='^emberprof: [0-9]* profiles\{0,1\} written to '
		[ "$rp_empty" = 1 ] && rp_line='^emberprof: \([0-9]* profiles\{0,1\}\|no profiles were\) written to '
		rp_hint='^emberprof: hint: ' # why no profile came back (-e)
		grep -v "$rp_line" "$rp_dir/$rp_mode.err" | { [ "$rp_empty" = 1 ] && grep -v "$rp_hint" || cat; } >"$rp_dir/$rp_mode.err.rest"
		if [ "$(grep -c "$rp_line" "$rp_dir/$rp_mode.err")" != 1 ]; then
			fail "$rp_what: no 'profiles written to' line on stderr:"
			sed 's/^/    /' "$rp_dir/$rp_mode.err" >&2
		elif cmp -s "$rp_dir/plain.err" "$rp_dir/$rp_mode.err.rest"; then
			ok "$rp_what: nothing more on stderr"
		else
			fail "$rp_what: stderr differs from the unprofiled run's (agent output?):"
			diff "$rp_dir/plain.err" "$rp_dir/$rp_mode.err.rest" | head -20 | sed 's/^/    /' >&2
		fi

		# every profile valid; their functions kept for the hot check
		rp_n=0
		rp_bad=0
		: >"$rp_dir/$rp_mode.raw"
		for f in "$rp_dir/prof-$rp_mode"/*.pb.gz; do
			[ -e "$f" ] || continue
			rp_n=$((rp_n + 1))
			if ! go tool pprof -raw "$f" >>"$rp_dir/$rp_mode.raw" 2>"$rp_dir/pprof.err"; then
				rp_bad=$((rp_bad + 1))
				fail "$rp_what: go tool pprof cannot read $(basename "$f"):"
				sed 's/^/    /' "$rp_dir/pprof.err" >&2
			fi
		done
		if [ "$rp_n" -eq 0 ] && [ "$rp_empty" = 1 ]; then
			ok "$rp_what: no profile (allowed: it may use too little CPU for a sample)"
		elif [ "$rp_n" -eq 0 ]; then
			fail "$rp_what: no profile written"
		elif [ "$rp_bad" -eq 0 ]; then
			ok "$rp_what: $rp_n profiles, all read by go tool pprof"
		fi
		# coverage: the profiles' CPU over the program tree's in this run
		rp_cpu=$(python3 "$RP_COVER" profiles "$rp_dir/prof-$rp_mode" 10 2>/dev/null | awk '{ print $1 }')
		read -r rp_plain_cpu _ <"$rp_dir/plain.ru"
		read -r _ rp_self_cpu rp_tree_cpu <"$rp_dir/$rp_mode.ru"
		rp_cov=$(python3 -c "import sys; p, t = map(float, sys.argv[1:]); print('%.0f' % (100 * p / t) if t > 0 else 'n/a')" "${rp_cpu:-0}" "${rp_tree_cpu:-0}")
		echo "coverage $rp_what: ${rp_cov} % (${rp_cpu:-0} s in the profiles; the program used ${rp_tree_cpu:-?} s in this run, emberprof ${rp_self_cpu:-?} s; the unprofiled run $rp_plain_cpu s)"
		if [ "$rp_mode" = default ] && [ "$rp_empty" = 0 ]; then
			if [ "$rp_cov" != n/a ] && [ "$rp_cov" -ge "$rp_floor" ]; then
				ok "$rp_what: coverage $rp_cov % (>= $rp_floor %)"
			else
				fail "$rp_what: coverage $rp_cov % of the program's CPU in the same run, under $rp_floor %"
			fi
		fi
		for h in $rp_hot; do
			# the name, then its end: " file:line", "@plt" or a
			# C++ parameter list
			if grep -q -- " $h[ @(]" "$rp_dir/$rp_mode.raw"; then
				ok "$rp_what: $h in the profiles"
			else
				fail "$rp_what: $h not in the profiles"
			fi
		done
	done
}
