# SPDX-License-Identifier: Apache-2.0
# lib.sh - shared by tests/plt/test_*.sh: a scratch directory $T (removed
# at exit) holding a.c, a program that calls a few libc functions through
# its PLT.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat >"$T/a.c" <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) { char *p = strdup(argv[0]); int n = printf("%s\n", p); free(p); return n + (int)strlen(argv[argc - 1]) + atoi(p); }
CEOF
failed=0
