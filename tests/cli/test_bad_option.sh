# SPDX-License-Identifier: Apache-2.0
# test_bad_option.sh - a bad option to `emberprof run` is reported naming
# the option, exits with 2, and the program never starts (it would create
# a marker file).
. "$(dirname "$0")/lib.sh"

# try NAME EXPECTED-TEXT ARGS... : runs emberprof run ARGS -- sh -c 'touch marker'
try() {
	name=$1 text=$2
	shift 2
	rm -f marker
	"$EMBERPROF" run "$@" -- sh -c 'touch marker' >out 2>err
	rc=$?
	check_exit "$name" 2 $rc
	check_grep "$name" err "$text"
	check_absent "$name: program not started" marker
}

try "unknown option" "--frobnicate" --frobnicate
try "unknown short option" "'-Z'" -Z
try "rate zero" "--rate" --rate 0
try "rate not a number" "--rate" --rate fast
try "rate too high" "--rate" --rate=100000
try "interval unit" "--interval" --interval 5parsecs
try "interval too short" "--interval" --interval 10ms
try "depth" "--depth" --depth 0
try "unwind" "--unwind" --unwind magic
try "log level" "--log-level" --log-level loud
try "engine" "--engine" --engine warp
try "signal" "--signal" --signal SIGNOPE
try "tag without =" "--tag" --tag novalue
try "tag with comma" "--tag" --tag "k=a,b"
try "tag bad key" "--tag" --tag "1k=v"
try "duplicate tag" "--tag" --tag k=1 --tag k=2
try "top zero" "--top" --top 0
try "empty app" "--app" --app ""
try "flag with value" "--quiet" --quiet=yes
try "missing value" "needs a value" --rate

# The value is missing because the option ends the arguments.
rm -f marker
"$EMBERPROF" run --output >out 2>err; rc=$?
check_exit "--output at the end" 2 $rc
check_grep "--output at the end" err "--output needs a value"

# An output directory that is a symlink is refused before starting.
mkdir real && ln -s real link
try "output symlink" "symbolic link" --output link

# An output directory under a regular file cannot be created.
: >plain
try "output under a file" "plain/sub" --output plain/sub

done_tests
