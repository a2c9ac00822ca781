# SPDX-License-Identifier: Apache-2.0
# test_engine_fallback.sh - `emberprof run` without --engine picks the
# tree engine where perf events are permitted, but its rings can still be
# refused when it attaches: the user's perf locked-memory allowance
# (perf_event_mlock_kb) is per user, and other perf sessions may hold it
# all, leaving only RLIMIT_MEMLOCK (64 KiB in many containers). The
# program, held before it executes, must then run once with the library
# preloaded, and say so; an explicit --engine tree stops with the reason.
#
# The allowance is used up for real, by a helper that maps perf rings of
# its own as a user of its own (a uid nothing else runs as, so that no
# other test shares its allowance), and runs emberprof while it holds them.
. "$(dirname "$0")/lib.sh"
unset EMBERPROF_ENGINE # as a user runs it (lib.sh pins the library)
need python3 setpriv
if [ "$(id -u)" != 0 ]; then
	echo "not root: the test needs a user of its own (setpriv), whose perf allowance it uses up: skipped"
	exit 77
fi

uid=64917
U=$(mktemp -d /tmp/ember-fallback-XXXXXX) && chmod 777 "$U" || exit 1
trap 'rm -rf "$T" "$U"' EXIT
as_user() {
	setpriv --reuid=$uid --regid=$uid --clear-groups env HOME="$U" \
		PATH=/usr/local/bin:/usr/bin:/bin "$@"
}

# hog.py LIMIT CMD...: RLIMIT_MEMLOCK of LIMIT bytes (or less, if the
# hard limit is lower), then perf rings
# mapped (disabled user-mode cpu-clock events on itself) until the kernel
# refuses one of a page: the user's allowance and this process's own
# RLIMIT_MEMLOCK both spent. Then runs CMD, which inherits the limit, and
# exits with its status (77: the kernel has no limit to spend here).
cat >"$U/hog.py" <<'PY'
import ctypes, os, platform, resource, struct, subprocess, sys
nr = {"x86_64": 298, "aarch64": 241}.get(platform.machine())
if nr is None:
    print("hog: no perf_event_open number for", platform.machine())
    sys.exit(77)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
limit = int(sys.argv[1])
hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
if hard != resource.RLIM_INFINITY and hard < limit:
    limit = hard
resource.setrlimit(resource.RLIMIT_MEMLOCK, (limit, limit))
page = os.sysconf("SC_PAGE_SIZE")
DISABLED, EXCLUDE_KERNEL, EXCLUDE_HV = 1, 1 << 5, 1 << 6
attr = struct.pack("IIQQQQQIIQ", 1, 64, 0, 10000000, 0, 0,
                   DISABLED | EXCLUDE_KERNEL | EXCLUDE_HV, 0, 0, 0)
held, rings = 0, 0
for pages in (256, 64, 16, 4, 1):
    while True:
        if rings > 500:
            print("hog: 500 rings mapped and none refused: no allowance to spend here")
            sys.exit(77)
        fd = libc.syscall(ctypes.c_long(nr), ctypes.c_char_p(attr), ctypes.c_int(0),
                          ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_ulong(8))
        if fd < 0:
            print("hog: perf_event_open:", os.strerror(ctypes.get_errno()))
            sys.exit(77)
        addr = libc.mmap(None, (pages + 1) * page, 3, 1, fd, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            os.close(fd)
            break
        held += pages + 1
        rings += 1
print("hog: %d rings, %d KiB held" % (rings, held * page // 1024), file=sys.stderr)
sys.stderr.flush()
sys.exit(subprocess.call(sys.argv[2:]))
PY
cat >"$U/probe.py" <<'PY'
import ctypes, platform, struct, os
nr = {"x86_64": 298, "aarch64": 241}.get(platform.machine())
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
attr = struct.pack("IIQQQQQIIQ", 1, 64, 0, 10000000, 0, 0, 1 | 2 | 1 << 5 | 1 << 6, 0, 0, 0)
fd = -1 if nr is None else libc.syscall(ctypes.c_long(nr), ctypes.c_char_p(attr), ctypes.c_int(0),
                                        ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_ulong(8))
print("yes" if fd >= 0 else "no")
PY
if ! (cd "$U" && as_user "$EMBERPROF" version >/dev/null 2>&1); then
	echo "uid $uid cannot run $EMBERPROF (a build under a directory others cannot enter): skipped"
	exit 77
fi
if [ "$(cd "$U" && as_user python3 probe.py 2>/dev/null)" != yes ]; then
	echo "perf events are refused to an unprivileged user here: its default is the library, which has nothing to fall back from: skipped"
	exit 77
fi
# what a default run picks for this user with its allowance free
(cd "$U" && as_user "$EMBERPROF" run -q --log-level info -o probe-out -- true 2>choice.err >/dev/null)
if ! grep -q "engine: the tree engine" "$U/choice.err"; then
	echo "the default run picks the library for uid $uid here ($(grep engine: "$U/choice.err")): nothing falls back: skipped"
	exit 77
fi

# the program appends a line per run: it must run once
burn='echo "$LD_PRELOAD" >>runs.seen; i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done'

# hogged NAME ARGS... : emberprof run ARGS -- the burn, as the user, its
# allowance spent; rc, stderr in $U/err, runs in $U/runs.seen
hogged() {
	name=$1
	shift
	rm -rf "$U/out" "$U/runs.seen"
	(cd "$U" && as_user python3 hog.py 65536 "$EMBERPROF" run -q "$@" -- sh -c "$burn" \
		>stdout 2>err)
	rc=$?
	if [ $rc = 77 ]; then
		echo "$name: $(grep hog: "$U/stdout" "$U/err" | head -1): skipped"
		exit 77
	fi
	grep "hog:" "$U/err"
}

hogged "no --engine" -o out
check_exit "no --engine" 0 $rc
check_grep "no --engine: the note" "$U/err" "emberprof: note: the tree engine could not start (perf tree: mapping the rings"
check_grep "no --engine: what it does instead" "$U/err" "): the preloaded library profiles the program instead"
n=$(wc -l <"$U/runs.seen" 2>/dev/null || echo 0)
if [ "$n" = 1 ] && grep -q libemberprof "$U/runs.seen"; then
	ok "no --engine: the program ran once, the library preloaded"
else
	fail "no --engine: the program ran $n time(s), LD_PRELOAD '$(cat "$U/runs.seen" 2>/dev/null)'; stderr:"
	sed 's/^/    /' "$U/err" >&2
fi
check_profiles "no --engine" "$U/out" "$U/err"

# the other way a run starts the program: to a server only, no directory
# (the server is not there; the library logs what it could not send)
hogged "no --engine, --server only" --server http://127.0.0.1:9 --log-level error
check_exit "no --engine, --server only" 0 $rc
check_grep "--server only: the note" "$U/err" "emberprof: note: the tree engine could not start"
if [ "$(wc -l <"$U/runs.seen" 2>/dev/null)" = 1 ] && grep -q libemberprof "$U/runs.seen"; then
	ok "--server only: the program ran once, the library preloaded"
else
	fail "--server only: runs '$(cat "$U/runs.seen" 2>/dev/null)'; stderr:"
	sed 's/^/    /' "$U/err" >&2
fi

# asked for by name, the tree engine does not give way: it stops, saying
# why and what to do, and the program never runs
hogged "--engine tree" --engine tree -o out
if [ $rc != 0 ] && [ ! -e "$U/runs.seen" ]; then
	ok "--engine tree: stopped (exit $rc) before the program ran"
else
	fail "--engine tree: exit $rc, runs '$(cat "$U/runs.seen" 2>/dev/null)'"
fi
check_grep "--engine tree: the reason" "$U/err" "mapping the rings"
check_grep "--engine tree: what to do" "$U/err" "--engine auto profiles with the preloaded library instead"
done_tests
