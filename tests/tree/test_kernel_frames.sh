# SPDX-License-Identifier: Apache-2.0
# test_kernel_frames.sh - the kernel's frames in the tree engine's profiles
# where the kernel allows them: `dd if=/dev/zero of=/dev/null` spends its
# time in read, in the kernel (read_zero, clear_user...).
#  - kernel samples permitted and /proc/kallsyms giving addresses (root,
#    kptr_restrict 0 or 1): >= 80 % of the samples in read carry named
#    frames of the [kernel.kallsyms] mapping;
#  - kallsyms refused (as root: kptr_restrict 2 for the run, restored
#    after): each such sample carries one [kernel] frame, and the run
#    says so;
#  - --no-kernel: no kernel frame at all;
#  - an unprivileged user at perf_event_paranoid 2: user mode only, no
#    kernel frame, and the run says so.
# Each part is skipped with its reason where it cannot run here; all of
# them: 77.
. "$(dirname "$0")/lib.sh"
need dd
unset EMBERPROF_ENGINE
KF="$TREE_DIR/kernel_frames.py"
ran=0

# Each run needs 20 samples in read: dd copies for about a second
# (6000 MiB took 2-3 s on the first machines, 0.24 s on a faster one,
# which then had 11 samples). Sized here by one run of 2000 MiB.
t0=$(date +%s%N)
dd if=/dev/zero of=/dev/null bs=1M count=2000 2>/dev/null
t1=$(date +%s%N)
COUNT=$(python3 -c "import sys; ns = max(int(sys.argv[1]), 1); print(min(60000, max(6000, 2000 * 10**9 // ns)))" $((t1 - t0)))
echo "dd: $COUNT MiB a run"

dd_run() { # DIR [OPTIONS...]
	d=$1
	shift
	"$EMBERPROF" run -q --engine tree "$@" -o "$d" -- dd if=/dev/zero of=/dev/null bs=1M count=$COUNT >"$d.out" 2>"$d.err"
}

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
kptr=$(cat /proc/sys/kernel/kptr_restrict 2>/dev/null || echo 2)
if [ "$(id -u)" = 0 ] || [ "$paranoid" -le 1 ]; then
	if [ "$kptr" = 2 ] || { [ "$(id -u)" != 0 ] && [ "$kptr" = 1 ]; }; then
		echo "skipped (named frames): /proc/kallsyms gives no addresses here (kptr_restrict $kptr)"
	else
		ran=1
		dd_run named
		check_exit "dd (kernel frames named)" 0 $?
		read -r n named one maxu <<EOT
$(python3 "$KF" named)
EOT
		if [ "$n" -ge 20 ] && [ $((named * 100)) -ge $((n * 80)) ]; then
			ok "dd: $named of the $n samples in read carry named kernel frames"
		else
			fail "dd: $named of the $n samples in read carry named kernel frames (want >= 80 %)"
			sed 's/^/    /' named.err >&2
		fi
		go tool pprof -top named/*.pb.gz 2>/dev/null | grep -q 'read_zero\|clear_user\|rep_stos\|copy_user\|iov_iter_zero' &&
			ok "dd: the kernel's own work is named (read_zero / clear_user ...)" ||
			fail "dd: no read_zero or clear_user among the kernel frames"
		check_no_grep "dd: no note about kernel frames" named.err "note: kernel frames"

		ran=1
		dd_run none --no-kernel
		check_exit "dd --no-kernel" 0 $?
		if go tool pprof -raw none/*.pb.gz 2>/dev/null | grep -q 'kernel.kallsyms'; then
			fail "dd --no-kernel: a [kernel.kallsyms] mapping"
		else
			ok "dd --no-kernel: no kernel frames"
		fi
	fi
	if [ "$(id -u)" = 0 ] && [ -w /proc/sys/kernel/kptr_restrict ]; then
		ran=1
		trap 'echo "$kptr" >/proc/sys/kernel/kptr_restrict; rm -rf "$T"' EXIT
		echo 2 >/proc/sys/kernel/kptr_restrict
		dd_run refused
		rc=$?
		echo "$kptr" >/proc/sys/kernel/kptr_restrict
		check_exit "dd (kptr_restrict 2)" 0 $rc
		read -r n named one maxu <<EOT
$(python3 "$KF" refused)
EOT
		if [ "$n" -ge 20 ] && [ "$named" = 0 ] && [ "$maxu" -le 1 ] && [ $((one * 100)) -ge $((n * 80)) ]; then
			ok "dd (kptr_restrict 2): $one of the $n samples in read carry one [kernel] frame, none a name"
		else
			fail "dd (kptr_restrict 2): of $n samples in read, $named named, $one with one [kernel] frame, at most $maxu [kernel] frames"
		fi
		check_grep "dd (kptr_restrict 2): the run says why" refused.err \
			"note: kernel frames are one [kernel] frame each: /proc/kallsyms gives no addresses here (kernel.kptr_restrict 2)"
	fi
fi

# an unprivileged user at perf_event_paranoid 2
if [ "$(id -u)" = 0 ] && [ "$paranoid" = 2 ] && command -v setpriv >/dev/null; then
	ran=1
	chmod 711 "$T" # the scratch directory, for nobody to reach its own
	mkdir user && chmod 777 user
	(cd user && setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$EMBERPROF" run -q --engine tree -o out -- dd if=/dev/zero of=/dev/null bs=1M count=$COUNT >out.txt 2>err.txt)
	check_exit "dd as nobody (perf_event_paranoid 2)" 0 $?
	check_profiles "dd as nobody" user/out user/err.txt
	if go tool pprof -raw user/out/*.pb.gz 2>/dev/null | grep -q 'kernel.kallsyms'; then
		fail "dd as nobody: kernel frames at perf_event_paranoid 2"
	else
		ok "dd as nobody: no kernel frames (user mode only)"
	fi
	check_grep "dd as nobody: the run says why" user/err.txt "note: no kernel frames: perf events sample user mode only"
else
	echo "skipped (unprivileged user): not root, or perf_event_paranoid is $paranoid, not 2"
fi
[ $ran = 1 ] || { echo "skipped: no part can run here"; exit 77; }
done_tests
