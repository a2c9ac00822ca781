# test_engine_choice.sh - which engine `emberprof run` uses without
# --engine (issue 15): the tree sampled from outside where perf events
# count kernel time and no option needs the library, else the library
# preloaded into the program. What the program sees tells them apart: the
# library is in its LD_PRELOAD, the tree engine puts nothing there.
. "$(dirname "$0")/lib.sh"
unset EMBERPROF_ENGINE # as a user runs it (lib.sh pins the library)
need python3

# Whether this process may open a CPU-clock perf event on itself counting
# kernel time: asked of the kernel directly, not of emberprof.
kernel_perf=$(python3 - <<'PY'
import ctypes, os, platform, struct
nr = {"x86_64": 298, "aarch64": 241}.get(platform.machine())
if nr is None:
    print(0); raise SystemExit
# perf_event_attr, its first 64 bytes (PERF_ATTR_SIZE_VER0): type 1
# (software), config 0 (cpu-clock), flags: disabled, exclude_hv
attr = struct.pack("IIQQQQQIIQ", 1, 64, 0, 0, 0, 0, (1 << 0) | (1 << 6), 0, 0, 0)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
fd = libc.syscall(ctypes.c_long(nr), ctypes.c_char_p(attr), ctypes.c_int(0), ctypes.c_int(-1),
                  ctypes.c_int(-1), ctypes.c_ulong(8))
if fd >= 0:
    os.close(fd)
print(1 if fd >= 0 else 0)
PY
)
echo "perf events with kernel time permitted here: $kernel_perf"

burn='echo "$LD_PRELOAD" >preload.seen; i=0; while [ $i -lt 400000 ]; do i=$((i + 1)); done'

# run NAME EXPECT(tree|library) ARGS... : runs the burn under emberprof run
# ARGS and checks what the program saw and what was written
run() {
	name=$1 expect=$2
	shift 2
	rm -rf out preload.seen
	"$EMBERPROF" run -q --log-level info "$@" -o out -- sh -c "$burn" >stdout 2>err
	rc=$?
	check_exit "$name" 0 $rc
	if [ ! -e preload.seen ]; then
		fail "$name: the program did not run"
		return
	fi
	if grep -q libemberprof preload.seen; then seen=library; else seen=tree; fi
	if [ "$seen" = "$expect" ]; then
		ok "$name: the $expect engine (LD_PRELOAD '$(cat preload.seen)')"
	else
		fail "$name: the $seen engine, expected the $expect one; LD_PRELOAD '$(cat preload.seen)', stderr:"
		sed 's/^/    /' err >&2
	fi
	n=$(find out -name '*.pb.gz' 2>/dev/null | wc -l)
	if [ "$n" -ge 1 ]; then
		ok "$name: $n profile(s) written"
	else
		fail "$name: no profile written; stderr:"
		sed 's/^/    /' err >&2
	fi
}

if [ "$kernel_perf" = 1 ]; then
	run "no --engine" tree
	check_grep "no --engine: the choice is said at --log-level info" err \
		"engine: the tree engine: perf events are permitted, with kernel time"
	run "no --engine, --no-follow-children" tree --no-follow-children
else
	run "no --engine" library
	check_grep "no --engine: the choice is said at --log-level info" err "engine: the preloaded library"
fi
# options only the library acts on keep it, whatever the kernel permits
run "--wall" library --wall
check_grep "--wall: the reason" err "engine: the preloaded library, for --wall"
run "--format both" library --format both
run "--thread-labels" library --thread-labels
run "--signal" library --signal SIGRTMIN+4
run "--unwind fp" library --unwind fp
run "--engine auto" library --engine auto
export EMBERPROF_ENGINE=auto
run "EMBERPROF_ENGINE=auto" library
export EMBERPROF_ENGINE=perf
run "EMBERPROF_ENGINE=perf" library
unset EMBERPROF_ENGINE

done_tests
