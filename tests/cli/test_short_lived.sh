# test_short_lived.sh - processes that live a few milliseconds cost next to
# nothing and leave nothing behind (issue 15): under `emberprof run -f`, a
# shell loop's /bin/true processes take no sample, so they build no unwind
# table and write no profile, while the shell itself, which burns CPU, is
# profiled and builds the tables of the modules its samples land in. A run
# where nothing at all was written still gets the CLI's warning.
. "$(dirname "$0")/lib.sh"

if ! command -v bash >/dev/null; then
	echo "skipped: no bash" >&2
	exit 77
fi
true_bin=$(command -v true)
case $true_bin in /*) ;; *) true_bin=/bin/true ;; esac

# 30 /bin/true, then ~0.2-1 s of the shell's own CPU (a control: the run
# does write profiles, and builds tables lazily where samples land).
"$EMBERPROF" run -f --log-level info -o out -- bash -c \
	"for i in \$(seq 30); do $true_bin; done; i=0; while [ \$i -lt 200000 ]; do i=\$((i+1)); done" \
	>stdout 2>err
rc=$?
check_exit "shell loop" 0 $rc
n_true=$(ls out 2>/dev/null | grep -c '^true-')
n_bash=$(ls out 2>/dev/null | grep -c '^bash-')
if [ "$n_true" -eq 0 ]; then ok "shell loop: no profile from the /bin/true processes"
else fail "shell loop: $n_true profile files from /bin/true processes:"; ls out >&2; fi
if [ "$n_bash" -ge 1 ]; then ok "shell loop: the shell wrote $n_bash profile(s)"
else fail "shell loop: no profile from the shell itself:"; ls -la out >&2; sed 's/^/    /' err >&2; fi
# Each /bin/true logs its tables at stop: none built, all left pending.
n_none=$(grep -c 'DWARF unwind tables, built lazily: 0 modules built' err)
if [ "$n_none" -ge 30 ]; then ok "shell loop: $n_none processes built no unwind table"
else fail "shell loop: only $n_none processes say they built no unwind table:"; sed 's/^/    /' err >&2; fi
if grep -Eq 'DWARF unwind tables, built lazily: [1-9][0-9]* modules built as samples landed' err; then
	ok "shell loop: the shell built tables for the modules it was sampled in"
else
	fail "shell loop: no process built a table lazily:"; sed 's/^/    /' err >&2
fi
if grep -Eq 'DWARF unwind tables: [0-9]+ modules' err; then
	fail "shell loop: tables were built at start:"; sed 's/^/    /' err >&2
else
	ok "shell loop: no table built at start"
fi

# Nothing at all to write: no file, and the CLI says so.
"$EMBERPROF" run -o out2 -- "$true_bin" >stdout 2>err
rc=$?
check_exit "/bin/true alone" 0 $rc
n=$(ls out2 2>/dev/null | wc -l)
if [ "$n" -eq 0 ]; then ok "/bin/true alone: no profile file"
else fail "/bin/true alone: $n files:"; ls out2 >&2; fi
if grep -qi 'no profile' err; then ok "/bin/true alone: the CLI warns that nothing was written"
else fail "/bin/true alone: no warning:"; sed 's/^/    /' err >&2; fi

done_tests
