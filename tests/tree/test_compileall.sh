# SPDX-License-Identifier: Apache-2.0
# test_compileall.sh - `python3 -m compileall -j0` (a process pool of forked
# workers that never exec and end with os._exit) on ~400 files of Python's
# own library, under `emberprof run` with no flag: at least 90 % of the
# workers' CPU is in profiles with their pids. The workers' CPU is their
# main thread's, read just before the pool shuts them down
# (compileall_driver.py).
. "$(dirname "$0")/lib.sh"
not_in_asan "python3 -m compileall"
PY=$(python3 -c 'import sys; print(sys.executable)')
LIB=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
"$PY" -c 'import concurrent.futures, multiprocessing; assert multiprocessing.get_start_method() == "fork"' 2>/dev/null ||
	{ echo "this python's process pool does not fork: skipped"; exit 77; }

mkdir -p "$T/src"
cp "$LIB"/*.py "$T/src/"
for m in json asyncio xml email http multiprocessing concurrent importlib lib2to3 idlelib tkinter; do
	[ -d "$LIB/$m" ] && cp -r "$LIB/$m" "$T/src/"
done
# without test data written to fail (lib2to3's Python 2 files)
find "$T/src" \( -name __pycache__ -o -name tests -o -name test \) -prune -exec rm -rf {} +

"$EMBERPROF" run -q -o "$T/prof" -- "$PY" "$TREE_DIR/compileall_driver.py" "$T/workers" "$T/src" >"$T/out" 2>"$T/err"
rc=$?
check_exit "compileall" 0 $rc
[ $rc = 0 ] || sed 's/^/    /' "$T/out" "$T/err" | head -20 >&2
[ -s "$T/workers" ] || { fail "the driver noted no worker"; sed 's/^/    /' "$T/err" >&2; done_tests; }
total=0
sum=0
while read -r w cpu; do
	c=$(profiled_cpu "$T/prof" "$w")
	echo "worker $w: $cpu s of CPU, $c s in the profiles"
	[ "$c" != 0 ] || fail "worker $w: not in the profiles"
	total=$(python3 -c "print($total + $cpu)")
	sum=$(python3 -c "print($sum + $c)")
done <"$T/workers"
python3 -c "import sys; sys.exit(0 if $total >= 0.5 else 1)" || fail "the workers used only $total s of CPU"
check_cover "compileall workers" "$sum" "$total" 0.9 1.1
done_tests
