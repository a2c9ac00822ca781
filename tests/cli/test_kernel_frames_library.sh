# SPDX-License-Identifier: Apache-2.0
# test_kernel_frames_library.sh - the kernel's frames in the preloaded
# library's perf-event engine (EMBERPROF_ENGINE=perf): a program that spends
# its CPU in read() of /dev/zero (in the kernel: read_zero, clear_user...)
#  - kernel samples permitted and /proc/kallsyms giving addresses: >= 80 %
#    of its samples in read carry named frames of the [kernel.kallsyms]
#    mapping, on the leaf side of read (go tool pprof -raw); the library's
#    own count of samples with kernel frames covers them, and no sample
#    found its callchain record missing;
#  - --no-kernel: no kernel frame at all.
# Skipped (77) where the perf engine cannot run, where perf events sample
# user mode only (perf_event_paranoid 2 without CAP_PERFMON), or where
# /proc/kallsyms hides addresses (kptr_restrict).
. "$(dirname "$0")/lib.sh"
need python3
command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }
KF="$(dirname "$0")/../tree/kernel_frames.py"
export EMBERPROF_ENGINE=perf

# CPU in read() of /dev/zero, 0.6 s of it whatever the machine's load
cat >readzero.py <<'PY'
import time
buf = bytearray(1 << 20)
with open("/dev/zero", "rb", buffering=0) as f:
    t = time.process_time()
    while time.process_time() - t < 0.6:
        f.readinto(buf)
PY

"$EMBERPROF" run -q --log-level info -o named -- python3 readzero.py >named.out 2>named.err
rc=$?
if [ $rc != 0 ] && grep -q "perf_events engine was asked for but is not available" named.err; then
	echo "skipped: the perf engine cannot run here: $(grep -m1 'not available' named.err)"
	exit 77
fi
check_exit "read of /dev/zero" 0 $rc
if grep -q "no kernel frames: perf events sample user mode only" named.err; then
	echo "skipped: perf events sample user mode only here (perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null))"
	exit 77
fi
check_grep "kernel frames asked of the perf events" named.err "kernel frames from the perf events' callchains"
if grep -q "note: kernel frames are one \[kernel\] frame each" named.err; then
	echo "skipped (named frames): $(grep -m1 'one \[kernel\] frame' named.err)"
	exit 77
fi
read -r n named one maxu misplaced <<EOT
$(python3 "$KF" named --order)
EOT
if [ "$n" -ge 20 ] && [ $((named * 100)) -ge $((n * 80)) ]; then
	ok "$named of the $n samples in read carry named kernel frames"
else
	fail "$named of the $n samples in read carry named kernel frames (want >= 80 %)"
	sed 's/^/    /' named.err >&2
fi
[ "$misplaced" = 0 ] && ok "kernel frames on the leaf side of read" ||
	fail "$misplaced samples have kernel frames on the caller side of read"
go tool pprof -top named/*.pb.gz 2>/dev/null | grep -q 'read_zero\|clear_user\|rep_stos\|copy_user\|iov_iter_zero' &&
	ok "the kernel's own work is named (read_zero / clear_user ...)" ||
	fail "no read_zero or clear_user among the kernel frames"
# the library's own account (a line per process the run started: python
# may start helpers): samples with kernel frames, and none whose record was
# missing
read -r carry missing <<EOT
$(grep -o 'kernel frames: [0-9]* samples carry them, [0-9]* found no callchain record' named.err |
	awk '{ c += $3; m += $7; n++ } END { if (n) print c, m }')
EOT
if [ -n "$carry" ] && [ "$carry" -ge "$named" ] && [ "$missing" = 0 ]; then
	ok "the library counted $carry samples with kernel frames, $missing without their record"
else
	fail "the library's count: ${carry:-no} samples with kernel frames, ${missing:-?} without their record (want >= $named, 0)"
fi

"$EMBERPROF" run -q --log-level info --no-kernel -o none -- python3 readzero.py >none.out 2>none.err
check_exit "read of /dev/zero, --no-kernel" 0 $?
check_profiles "--no-kernel" none none.err
if go tool pprof -raw none/*.pb.gz 2>/dev/null | grep -q 'kernel.kallsyms'; then
	fail "--no-kernel: a [kernel.kallsyms] mapping"
else
	ok "--no-kernel: no kernel frames"
fi
check_no_grep "--no-kernel: no callchains asked" none.err "kernel frames from the perf events"
done_tests
