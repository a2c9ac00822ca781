# SPDX-License-Identifier: Apache-2.0
# test_attach_alloc.sh - `emberprof attach --alloc PID` (x86-64, aarch64): the
# library loaded into a running program (alloc_work.c) whose three threads
# allocate in a loop, one of them in a shared library built with -fno-plt
# and -z now (GLOB_DAT entries in a read-only GOT); the agent points every
# module's GOT entries of malloc & co at its wrappers. Checked: while
# attached the program sees every one of its entries changed (it reads
# them itself); after detach every entry holds its value of before the
# attach again, the threads, caught signals and descriptors are those of
# before (no emberprof thread left), no block was corrupted and the
# program prints what it prints unprofiled and exits 0. The memory
# profile, read by `go tool pprof -raw`, has the four sample types, the
# allocation functions (the library's too) on its stacks, in-use bytes
# for the sites that keep blocks live, none for the block allocated
# before the attach, and says in its comment (and the summary) that
# allocations made before attach are not seen. A library the program
# loads with dlopen while attached is patched at the next window's end
# (the agent says so; the program sees its entries changed too) and its
# allocation site is in the profile. A second attach patches and
# restores again, and so does a third whose emberprof is killed (the
# agent's watch stops it, and its stop restores). Skipped (77) on other machines and where ptrace is
# refused.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib_attach.sh"
: "${EMBER_ALLOC_WORK:?EMBER_ALLOC_WORK must name the alloc_work program}"
: "${EMBER_ALLOC_WORK_LATE:?EMBER_ALLOC_WORK_LATE must name the library alloc_work loads late}"
case "$(uname -m)" in
x86_64 | aarch64) ;;
*)
	echo "attach --alloc patches x86-64 and aarch64 GOT entries only: not on $(uname -m)"
	exit 77
	;;
esac
case "${EMBER_TEST_SANITIZE:-OFF}" in
ON | on | 1 | TRUE | true)
	echo "skipped in the sanitizer build: the sanitizer owns malloc, the library defines none"
	exit 77
	;;
esac
command -v go >/dev/null 2>&1 || { echo "go not installed: profiles cannot be checked"; exit 77; }
ptrace_probe

# holdings (lib_attach.sh), without the thread started on "late"
holdings_of_program() {
	holdings "$1" >h.all
	for t in $(head -1 h.all); do
		[ "$(cat "/proc/$1/task/$t/comm" 2>/dev/null)" = late-alloc ] || printf '%s ' "$t"
	done
	echo
	tail -n +2 h.all
}

rm -f ctl state
mkfifo ctl || exit 1
"$EMBER_ALLOC_WORK" state "$EMBER_ALLOC_WORK_LATE" <ctl >target.stdout 2>target.out &
TPID=$!
exec 3>ctl
wait_grep state ready || { fail "the target did not start"; exit 1; }
nslots=$(sed -n 's/^ready \([0-9]*\)$/\1/p' state)
[ "${nslots:-0}" -ge 10 ] && ok "the program found $nslots GOT entries of malloc & co in its modules" ||
	fail "the program found ${nslots:-no} GOT entries"
holdings_of_program "$TPID" >before

# attached until SIGINT: the program checks its entries in between
"$EMBERPROF" attach --alloc=4096 --interval 200ms --log-level info -o out "$TPID" >err 2>&1 &
EPID=$!
if ! wait_grep target.out "slots patched"; then
	kill -INT $EPID 2>/dev/null
	wait $EPID
	if grep -q "ptrace refused" err; then
		echo "ptrace refused here: $(cat err)"
		exec 3>&-
		exit 77
	fi
	fail "the agent never said what it patched:"
	cat err target.out >&2
	exec 3>&-
	exit 1
fi
first=$(sed -n 's/.*GOT patching: \([0-9]*\) slots patched.*/\1/p' target.out | head -1)
# a library loaded now: patched at the next window's end
echo late >&3
wait_grep state "late " || fail "the program did not load its late library"
nlate=$(sed -n 's/^late \([0-9]*\)$/\1/p' state)
[ "${nlate:-0}" -gt "$nslots" ] && ok "the late library has $((nlate - nslots)) GOT entries of malloc & co" ||
	fail "the late library's entries: ${nlate:-none} in all, $nslots before"
wait_grep target.out "more slots patched in modules loaded since" ||
	fail "no window's rescan patched the late library: $(grep GOT target.out)"
# The program checks its entries until a rescan has patched the late
# library's too: a rescan line can come first from another library loaded
# meanwhile (the agent's own lazily loaded ones), at any window's end.
i=0
while :; do
	n=$(grep -c '^check ' state)
	echo check >&3
	j=0
	while [ "$(grep -c '^check ' state)" -le "$n" ] && [ $j -lt 300 ]; do sleep 0.1; j=$((j + 1)); done
	grep -q "^check changed=$nlate/$nlate$" state && break
	i=$((i + 1))
	[ $i -lt 50 ] || break
	sleep 0.2
done
more=$(sed -n 's/.*profiling: \([0-9]*\) more slots patched.*/\1/p' target.out | awk '{ s += $1 } END { print s + 0 }')
check_grep "every GOT entry of the program's modules (the late library's too) patched while attached" state \
	"check changed=$nlate/$nlate"
nchecks=$(grep -c '^check ' state)
nslots=$nlate
patched=$((first + more))
kill -INT $EPID
wait $EPID
check_exit "attach --alloc, stopped by SIGINT" 0 $?
check_grep "the agent started" err "library loaded and agent started in 1 process"
check_grep "the summary says what the in-use figures miss" err \
	"note: attached to a running process: allocations made before attach are not seen"
check_grep "the agent restored every entry it patched" target.out \
	"allocation profiling: $patched of the $patched GOT entries patched restored"
[ "${patched:-0}" -ge "$nslots" ] && ok "the agent patched $patched entries (the program's $nslots, and those of libemberprof's own dependencies)" ||
	fail "the agent patched ${patched:-no} entries, the program has $nslots"
echo check >&3
i=0
while [ "$(grep -c '^check ' state)" -le "$nchecks" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
grep '^check' state | tail -1 | grep -q "^check changed=0/$nslots$" && ok "after detach every GOT entry holds its value of before" ||
	fail "after detach: $(grep '^check' state | tail -1) (target: $(grep alloc_work target.out))"
holdings_of_program "$TPID" >after
if cmp -s before after; then
	ok "detach left threads (no emberprof thread), SigCgt and descriptors as they were"
else
	fail "detach left something behind:"
	diff before after >&2
fi

# the memory profile, read by pprof
files=$(ls out/*.memory.pb.gz 2>/dev/null)
[ -n "$files" ] || fail "no memory profile written"
for f in $files; do go tool pprof -raw "$f"; done >raw.txt 2>raw.err || fail "pprof cannot read the memory profile: $(cat raw.err)"
check_grep "the four sample types" raw.txt "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes"
check_grep "the profile's comment says what it misses" raw.txt \
	"Comment: attached to a running process: allocations made before attach are not seen; inuse_objects and inuse_space count only blocks allocated after attach"
python3 - raw.txt <<'PY' >sites.txt || fail "the allocation sites are not as expected: $(cat sites.txt)"
import re, sys
loc, samples, sect = {}, [], None
for line in open(sys.argv[1]):
    s = line.strip()
    if s in ("Samples:", "Locations", "Mappings"):
        sect = s
        continue
    if sect == "Samples:" and ":" in s and s[0].isdigit():
        vals, ids = s.split(":", 1)
        samples.append(([int(v) for v in vals.split()], ids.split()))
    elif sect == "Locations":
        m = re.match(r"(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", s)
        if m:
            loc[m.group(1)] = m.group(2)
tot = {}
for vals, ids in samples:
    for f in {loc.get(i) for i in ids}:
        t = tot.setdefault(f, [0, 0, 0, 0])
        for k in range(4):
            t[k] += vals[k]
sites = ("alwork_site_malloc", "alwork_site_calloc", "alwork_site_memalign", "alwork_lib_site",
         "alwork_late_site")
for f in sites:
    print(f, *tot.get(f, [0, 0, 0, 0]))
ok = all(tot.get(f, [0, 0])[1] > 0 for f in sites)
# the sites that keep 64 blocks live (the library's through GLOB_DAT)
ok = ok and all(tot.get(f, [0] * 4)[3] > 0 for f in ("alwork_site_malloc", "alwork_lib_site"))
ok = ok and "alwork_site_before" not in tot and "work" in tot
sys.exit(0 if ok else 1)
PY
ok "alloc_space at the five sites, the libraries' included (the late one's too), in-use bytes where blocks stay live, nothing of the block allocated before: $(tr '\n' ';' <sites.txt)"

# again: the library is loaded, its agent stopped; a second attach
# patches and restores again
"$EMBERPROF" attach -q --alloc=4096 --log-level info --duration 300ms -o again "$TPID" >again.err 2>&1
check_exit "a second attach --alloc" 0 $?
ls again/*.memory.pb.gz >/dev/null 2>&1 && ok "the second attach wrote a memory profile" ||
	{ fail "the second attach wrote no memory profile"; cat again.err >&2; }
n=$(grep -c "GOT entries patched restored" target.out)
[ "$n" = 2 ] && ok "the second detach restored its entries too ($(grep 'GOT entries patched restored' target.out | tail -1))" ||
	fail "restores said $n times"

# emberprof killed while attached: the agent stops by itself (its
# watch), and its stop restores the entries too
"$EMBERPROF" attach --alloc=4096 --log-level info -o killed "$TPID" >killed.err 2>&1 &
EPID=$!
i=0
while [ "$(grep -c 'GOT patching:' target.out)" -lt 3 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -KILL $EPID
wait $EPID 2>/dev/null
i=0
while [ "$(grep -c 'GOT entries patched restored' target.out)" -lt 3 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
check_grep "emberprof killed: the agent's own stop restored its entries" target.out \
	"GOT entries patched restored"
[ "$(grep -c 'GOT entries patched restored' target.out)" = 3 ] || fail "emberprof killed: no restore said"
echo check >&3
i=0
while [ "$(grep -c '^check ' state)" -le $((nchecks + 1)) ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
grep '^check' state | tail -1 | grep -q "^check changed=0/$nslots$" &&
	ok "emberprof killed: every GOT entry holds its value of before" ||
	fail "emberprof killed: $(grep '^check' state | tail -1)"

echo stop >&3
wait_grep state done || fail "the program did not stop"
check_grep "the program's GOT entries as before, its blocks intact" state "done restored=$nslots/$nslots bad=0"
printf 'threads: 3 stopped, blocks intact\nrounds: all ran\n' >expected.stdout
cmp -s expected.stdout target.stdout && ok "the program's output is what it prints unprofiled" ||
	{ fail "the program's output:"; cat target.stdout >&2; }
exec 3>&-
wait "$TPID"
check_exit "the target after detach" 0 $?
done_tests
