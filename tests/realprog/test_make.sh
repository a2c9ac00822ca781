# SPDX-License-Identifier: Apache-2.0
# test_make.sh - make -j2 with --follow-children: make, sh, gcc, cc1, as
# and ld are all profiled.
. "$(dirname "$0")/lib.sh"
need make gcc
mkdir -p "$T/src"
for i in 1 2 3 4; do
	printf 'int part%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * %d; return s; }\n' $i $i >"$T/src/part$i.c"
done
printf 'int part1(int), part2(int), part3(int), part4(int);\nint main(void) { return (part1(3) + part2(3) + part3(3) + part4(3)) & 0; }\n' >"$T/src/main.c"
cat >"$T/src/Makefile" <<'MEOF'
OBJS = main.o part1.o part2.o part3.o part4.o
prog: $(OBJS)
	$(CC) -o $@ $(OBJS)
%.o: %.c
	$(CC) -O2 -c -o $@ $<
MEOF
setup_dir() { cp "$T"/src/* "$1"/; }
# -j2 prints the commands in either order; the objects are the output.
check_output() {
	grep -q '^prog ok' "$1" && [ "$(grep -c '^obj ' "$1")" = 5 ] &&
		[ "$(grep '^obj ' "$1")" = "$(grep '^obj ' "$T/make/plain.out")" ]
}
realprog make -f -p -- sh -c 'make -s -j2 CC=gcc >/dev/null && ./prog && echo "prog ok" && for o in main part1 part2 part3 part4; do echo "obj $o $(cksum <$o.o)"; done'
done_tests
