# SPDX-License-Identifier: Apache-2.0
# test_threads.sh - every sample's thread_name is the thread's own name
# (its /proc/self/task/TID/comm), never a placeholder: threads started by
# libc's pthread_create behind the preloaded hook's back and one through
# the hook, each named with pthread_setname_np, all burning CPU.
. "$(dirname "$0")/lib.sh"
profile "$T/t" --rate 1000 --thread-labels -- "$EMBER_NAMES_PROG" threads
for n in fx-raw-0 fx-raw-1 fx-raw-2 fx-hooked; do
	check_grep "thread $n" "$T/t.raw" "thread_name:[$n]"
done
sed -n 's/.*thread_name:\[\([^]]*\)\].*/\1/p' "$T/t.raw" | sort | uniq -c >"$T/t.names"
if grep -v -E ' (fx-raw-[012]|fx-hooked|ember_names_pro)$' "$T/t.names" | grep -q .; then
	fail "thread names other than the program's:"
	sed 's/^/    /' "$T/t.names" >&2
else
	ok "thread names: $(awk '{ printf "%s=%s ", $2, $1 }' "$T/t.names")"
fi
done_tests
