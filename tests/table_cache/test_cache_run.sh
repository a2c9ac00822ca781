# SPDX-License-Identifier: Apache-2.0
# test_cache_run.sh - the unwind-table cache end to end, under
# `emberprof run` on the demo (hot_a <- stage_one <- worker_main and
# hot_b <- stage_two <- worker_main):
# 1. a run with an empty cache directory builds and stores the tables of
#    the modules its samples land in (directory created 0700);
# 2. a second run loads them instead (a module the first run stored is
#    never built or stored again), and its profiles' chains are as
#    complete as the first's;
# 3. corrupt files (cut short, garbage, another module's table under the
#    name) are rejected, counted, rebuilt and written again, and the
#    chains stay complete;
# 4. a directory that cannot be created, and one where no file can be
#    created, leave the program as it was (exit 0, its output, profiles
#    with complete chains) and the failure is logged, not warned about;
# 5. --unwind-cache with a relative directory means the directory under
#    the current one.
. "$EMBER_TEST_SRCDIR/tests/cli/lib.sh"
: "${EMBER_DEMO:?EMBER_DEMO must name the demo executable}"

# demo_run NAME CACHE [OPTIONS]: one profiled run of the demo into prof-NAME,
# its stderr (debug log) in NAME.err, `emberprof top` in NAME.top.
demo_run() {
	name=$1 cache=$2
	shift 2
	"$EMBERPROF" run -q --rate 250 --log-level debug --unwind-cache "$cache" "$@" -o "prof-$name" \
		-- "$EMBER_DEMO" --threads 2 --seconds 1 >"$name.out" 2>"$name.err"
	check_exit "$name: the demo" 0 $?
	check_grep "$name: the demo's own output" "$name.out" "expected profile"
	"$EMBERPROF" top --sample-index samples "prof-$name"/*.pb.gz >"$name.top" 2>&1
}

# complete NAME: share (per mille) of all samples whose chain reaches
# worker_main (its cum over the total: only the workers burn CPU).
complete() {
	awk '/^Total samples:/ { total = $3 } $5 == "worker_main" { root = $3 }
	     END { print (total > 0 ? int(1000 * root / total) : 0) }' "$1.top"
}

# chains_ok NAME [AT_LEAST]: at least 97 % complete, and at least AT_LEAST
# per mille when given (the first run's, less 3 %).
chains_ok() {
	c=$(complete "$1")
	want=970
	[ $# -lt 2 ] || [ "$2" -lt $((want + 30)) ] || want=$(($2 - 30))
	if [ "$c" -ge "$want" ]; then
		ok "$1: ${c} per mille of the samples have their chain to worker_main"
	else
		fail "$1: only ${c} per mille of chains complete (want $want):"
		sed 's/^/    /' "$1.top" >&2
	fi
}

# 1. cold
demo_run cold "$T/cache"
check_grep "cold: stores" cold.err "stored in the cache"
check_no_grep "cold: nothing to load" cold.err "loaded from the cache"
n=$(ls "$T/cache" | grep -c '\.utab$')
if [ "$n" -ge 2 ]; then ok "cold: $n tables in the cache"; else fail "cold: $n tables in the cache"; fi
if ls -A "$T/cache" | grep -q '\.tmp\.'; then fail "cold: temporary files left"; else ok "cold: no temporary files"; fi
mode=$(stat -c %a "$T/cache")
[ "$mode" = 700 ] && ok "cold: directory mode 700" || fail "cold: directory mode $mode"
chains_ok cold
first=$(complete cold)

# 2. warm
demo_run warm "$T/cache"
check_grep "warm: tables loaded" warm.err "loaded from the cache"
check_grep "warm: counted at stop" warm.err " 0 stores failed, 0 files rejected"
# Which modules samples land in varies a little from run to run: a module
# the cold run stored must be loaded, never built or stored, in the warm one.
sed -n 's/^emberprof: debug: unwind table for \(.*\) stored in the cache.*/\1/p' cold.err >stored.list
while read -r m; do
	if grep -F "unwind table for $m " warm.err | grep -qE "of CPU from|stored in the cache"; then
		fail "warm: $m, stored by the cold run, was built again"
	else
		ok "warm: $m not built again"
	fi
done <stored.list
chains_ok warm "$first"

# 3. corrupt files: every file of the cache cut short or overwritten with
# garbage, in turn (which modules samples land in varies a little; the
# program's own executable always has samples)
i=0
for f in "$T/cache"/*.utab; do
	size=$(stat -c %s "$f")
	echo "$f $size" >>sizes.list
	if [ $((i % 2)) = 0 ]; then
		truncate -s $((size / 2)) "$f"
	else
		head -c "$size" /dev/urandom >"$f.new" && mv "$f.new" "$f"
	fi
	i=$((i + 1))
done
demo_run corrupt "$T/cache"
check_grep "corrupt: rejected" corrupt.err "rejected ("
n=$(grep -c "rejected (" corrupt.err)
check_grep "corrupt: counted" corrupt.err "$n files rejected"
check_grep "corrupt: rebuilt and stored" corrupt.err "stored in the cache"
whole=0
while read -r f size; do
	[ "$(stat -c %s "$f")" = "$size" ] && whole=$((whole + 1))
done <sizes.list
[ "$whole" -ge 1 ] && ok "corrupt: $whole file(s) written again whole" ||
	fail "corrupt: no corrupt file was written again"
chains_ok corrupt "$first"
# another module's table under this name: the build id inside does not match
set -- $(ls -S "$T/cache"/*.utab)
for f in "$@"; do [ "$f" = "$1" ] || cp "$1" "$f"; done
demo_run foreign "$T/cache"
check_grep "foreign: rejected" foreign.err "another module's build id"
check_grep "foreign: counted" foreign.err "$(grep -c "rejected (" foreign.err) files rejected"
chains_ok foreign "$first"

# 4. unusable directories: below a regular file; one where nothing can be created
: >plainfile
demo_run nodir "$T/plainfile/cache" --log-level info
check_grep "nodir: logged" nodir.err "unwind table cache $T/plainfile/cache unusable"
chains_ok nodir "$first"
if [ "$(id -u)" = 0 ]; then
	rodir=/proc/self/fdinfo # not even root creates files there
	demo_run readonly "$rodir" --log-level info
	check_grep "readonly: logged" readonly.err "unwind table cache: cannot create a file in"
else
	mkdir -m 500 ro
	rodir=$T/ro
	demo_run readonly "$rodir" --log-level info
	check_grep "readonly: logged" readonly.err "is not writable"
fi
check_no_grep "readonly: no warning" readonly.err "warning"
chains_ok readonly "$first"

# 5. a relative directory is made absolute (the program may chdir)
demo_run relative rel-cache
n=$(ls rel-cache 2>/dev/null | grep -c '\.utab$')
[ "$n" -ge 2 ] && ok "relative: $n tables in $T/rel-cache" || fail "relative: no tables in $T/rel-cache"

done_tests
