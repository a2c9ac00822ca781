# test_xz.sh - xz -T2: liblzma's workers start with every signal blocked.
. "$(dirname "$0")/lib.sh"
need xz
awk 'BEGIN { x = 7; for (i = 0; i < 300000; i++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%d %x line\n", x % 1000, x } }' >"$T/big"
# liblzma's exported entry points are on the workers' stacks (the internal
# lzma_* functions are not in the stripped library's symbol table).
realprog xz -H 'lzma_code' -- xz -3 -T2 -c "$T/big"
done_tests
