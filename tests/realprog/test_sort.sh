# SPDX-License-Identifier: Apache-2.0
# test_sort.sh - GNU sort (its own SIGPROF cleanup handler) in every mode.
. "$(dirname "$0")/lib.sh"
need sort
awk 'BEGIN { x = 1; for (i = 0; i < 400000; i++) { x = (x * 1103515245 + 12345) % 2147483648; print x } }' >"$T/numbers"
realprog sort -- sort -r "$T/numbers"
done_tests
