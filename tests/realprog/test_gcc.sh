# SPDX-License-Identifier: Apache-2.0
# test_gcc.sh - gcc driving cc1 and as (-f: cc1 is profiled too).
. "$(dirname "$0")/lib.sh"
need gcc
cat >"$T/unit.c" <<'CEOF'
#include <stdio.h>
#include <string.h>
struct node { int key; struct node *l, *r; };
static struct node *insert(struct node *n, struct node *m) {
	if (!n) return m;
	if (m->key < n->key) n->l = insert(n->l, m); else n->r = insert(n->r, m);
	return n;
}
#define F(i) int f##i(int x) { int s = 0; for (int j = 0; j < x; j++) s += j * i ^ (s >> 3); return s; }
F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12) F(13) F(14) F(15) F(16)
int main(void) { struct node a = {1, 0, 0}, b = {2, 0, 0}; insert(&a, &b); printf("%d\n", f3(10)); return 0; }
CEOF
# the object file is the output: its checksum on stdout
realprog gcc -f -- sh -c 'gcc -O2 -c -o unit.o "$0" && cksum <unit.o' "$T/unit.c"
done_tests
