# SPDX-License-Identifier: Apache-2.0
# test_engine_choice.sh - which engine `emberprof run` uses without
# --engine: the tree sampled from outside where perf events
# count kernel time (as root), or weigh user-mode samples by their counts
# (paranoid 2, Linux 6.12+), and no option needs the library, else the library
# preloaded into the program. What the program sees tells them apart: the
# library is in its LD_PRELOAD, the tree engine puts nothing there.
. "$(dirname "$0")/lib.sh"
unset EMBERPROF_ENGINE # as a user runs it (lib.sh pins the library)
need python3

# What perf events this process may open on itself, asked of the kernel
# directly, not of emberprof: "kernel" (samples counting kernel time),
# "weighed" (user-mode samples of an inherited event that read its count:
# perf_event_paranoid 2, Linux 6.12+) or "none".
cat >probe.py <<'PY'
import ctypes, os, platform, struct
nr = {"x86_64": 298, "aarch64": 241}.get(platform.machine())
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def opens(flags, sample_type):
    # perf_event_attr, its first 64 bytes (PERF_ATTR_SIZE_VER0): type 1
    # (software), config 0 (cpu-clock), a 10 ms period
    attr = struct.pack("IIQQQQQIIQ", 1, 64, 0, 10000000, sample_type, 0, flags, 0, 0, 0)
    fd = libc.syscall(ctypes.c_long(nr), ctypes.c_char_p(attr), ctypes.c_int(0),
                      ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_ulong(8))
    if fd >= 0:
        os.close(fd)
    return fd >= 0

DISABLED, INHERIT, EXCLUDE_KERNEL, EXCLUDE_HV = 1, 2, 1 << 5, 1 << 6
IP, TID, TIME, READ, PERIOD = 1, 2, 4, 16, 256
if nr is None:
    print("none")
elif opens(DISABLED | INHERIT | EXCLUDE_HV, IP | TID | TIME | PERIOD):
    print("kernel")
elif opens(DISABLED | INHERIT | EXCLUDE_KERNEL | EXCLUDE_HV, IP | TID | TIME | PERIOD | READ):
    print("weighed")
else:
    print("none")
PY
perf=$(python3 probe.py)
echo "perf events here: $perf"

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
	check_profiles "$name" out err
}

case $perf in
kernel)
	run "no --engine" tree
	check_grep "no --engine: the choice is said at --log-level info" err \
		"engine: the tree engine: perf events are permitted, with kernel time"
	run "no --engine, --no-follow-children" tree --no-follow-children
	;;
weighed)
	run "no --engine" tree
	check_grep "no --engine: the choice is said at --log-level info" err \
		"engine: the tree engine: perf events sample user mode only here"
	;;
*)
	run "no --engine" library
	check_grep "no --engine: the choice is said at --log-level info" err "engine: the preloaded library"
	;;
esac

# As a user without privileges (root here, as on CI: the same run as
# nobody), where perf_event_paranoid decides.
# nobody: uid and gid 65534, no groups (LD_PRELOAD kept: the ASan
# runtime in a sanitizer build), the system's PATH (root's may
# hold directories nobody cannot enter, as pyenv's shims)
nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$U" \
		PATH=/usr/local/bin:/usr/bin:/bin "$@"
}
U=
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	U=$(mktemp -d /tmp/ember-nobody-XXXXXX) && chmod 777 "$U" && cp probe.py "$U/"
	uperf=$(cd "$U" && nobody python3 probe.py)
	if [ -z "$uperf" ] || ! nobody "$EMBERPROF" version >/dev/null 2>&1; then
		echo "note: nobody cannot run python3 or $EMBERPROF here: the unprivileged run is not checked"
		rm -rf "$U"
		U=
	fi
fi
if [ -n "$U" ]; then
	case $uperf in kernel | weighed) uexpect=tree ;; *) uexpect=library ;; esac
	(cd "$U" && nobody "$EMBERPROF" run -q --log-level info -o out -- sh -c "$burn" >stdout 2>err)
	rc=$?
	check_exit "as nobody (perf events: $uperf)" 0 $rc
	if grep -q libemberprof "$U/preload.seen" 2>/dev/null; then useen=library; else useen=tree; fi
	if [ -e "$U/preload.seen" ] && [ "$useen" = "$uexpect" ]; then
		ok "as nobody: the $uexpect engine"
	else
		fail "as nobody: the $useen engine, expected the $uexpect one; stderr:"
		sed 's/^/    /' "$U/err" >&2
	fi
	check_profiles "as nobody" "$U/out" "$U/err"
	rm -rf "$U"
else
	echo "note: not root, or no setpriv: the run as an unprivileged user is not checked"
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
