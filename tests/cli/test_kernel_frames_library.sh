# SPDX-License-Identifier: Apache-2.0
# test_kernel_frames_library.sh - the kernel's frames in the preloaded
# library's perf-event engine (EMBERPROF_ENGINE=perf): a program that spends
# its CPU in read() of /dev/zero (in the kernel: read_zero, clear_user...)
#  - kernel samples permitted and /proc/kallsyms giving addresses: >= 80 %
#    of its samples in read carry named frames of the [kernel.kallsyms]
#    mapping, on the leaf side of read (go tool pprof -raw); the library's
#    own count of samples with kernel frames covers them, and no sample
#    found its callchain record missing;
#  - --no-kernel: no kernel frame at all;
#  - kallsyms refused (as root: kptr_restrict 2 for the run, restored
#    after): each such sample carries one [kernel] frame, and the log says
#    why;
#  - locked memory used up (as root without CAP_IPC_LOCK, RLIMIT_MEMLOCK 0:
#    the per-user perf_event_mlock_kb allowance is all there is, and 200
#    threads' rings of 8 KiB need more than 516 KiB per CPU): the run goes
#    on without kernel frames for the later threads, and the log says why.
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

kptr=$(cat /proc/sys/kernel/kptr_restrict 2>/dev/null || echo 2)
if [ "$(id -u)" = 0 ] && [ -w /proc/sys/kernel/kptr_restrict ]; then
	trap 'echo "$kptr" >/proc/sys/kernel/kptr_restrict; rm -rf "$T"' EXIT
	echo 2 >/proc/sys/kernel/kptr_restrict
	"$EMBERPROF" run -q -o refused -- python3 readzero.py >refused.out 2>refused.err
	rc=$?
	echo "$kptr" >/proc/sys/kernel/kptr_restrict
	check_exit "read of /dev/zero (kptr_restrict 2)" 0 $rc
	read -r n named one maxu misplaced <<EOT
$(python3 "$KF" refused --order)
EOT
	if [ "$n" -ge 20 ] && [ "$named" = 0 ] && [ "$maxu" -le 1 ] && [ $((one * 100)) -ge $((n * 80)) ] &&
		[ "$misplaced" = 0 ]; then
		ok "kptr_restrict 2: $one of the $n samples in read carry one [kernel] frame, none a name"
	else
		fail "kptr_restrict 2: of $n samples in read, $named named, $one with one [kernel] frame, at most $maxu [kernel] frames, $misplaced misplaced"
	fi
	check_grep "kptr_restrict 2: the log says why" refused.err \
		"note: kernel frames are one [kernel] frame each: /proc/kallsyms gives no addresses here (kernel.kptr_restrict 2)"
else
	echo "skipped (kallsyms refused): not root"
fi

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	cat >threads.py <<'PY'
import threading
go = threading.Event()
def rz():
    buf = bytearray(1 << 16)
    go.wait()
    with open("/dev/zero", "rb", buffering=0) as f:
        for _ in range(300):
            f.readinto(buf)
ts = [threading.Thread(target=rz) for _ in range(200)]
for t in ts:
    t.start()
go.set()
for t in ts:
    t.join()
PY
	(
		ulimit -l 0 || exit 99
		exec setpriv --bounding-set -ipc_lock "$EMBERPROF" run -q -o locked -- python3 threads.py
	) >locked.out 2>locked.err
	check_exit "200 threads, locked memory used up" 0 $?
	check_profiles "200 threads, locked memory used up" locked locked.err
	check_grep "locked memory used up: the log says why" locked.err \
		"note: no more kernel frames from here on: the perf ring of thread"
else
	echo "skipped (locked memory used up): not root, or no setpriv"
fi
done_tests
