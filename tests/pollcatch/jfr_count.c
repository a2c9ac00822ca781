/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jfr_count.c - prints "<event type> <count>" for every event type in a
 * JFR file, read with emberprof's JFR reader (tools/read/jfr_read.c), for
 * comparison with `jfr summary` (test_longpolls_jfr.sh). With a second
 * argument TYPE, also checks that every TYPE event decodes a stack trace
 * whose frames all have a method name, and prints "<TYPE> stacks ok N".
 * Exit 1 with the reader's message on a malformed file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "read/jfr_read.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: jfr_count FILE [TYPE]\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	unsigned char *d = malloc(n > 0 ? (size_t)n : 1);
	if (!d || fread(d, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "cannot read %s\n", argv[1]);
		return 1;
	}
	fclose(f);
	ember__jfr *j;
	if (ember__jfr_open(d, (size_t)n, &j)) {
		fprintf(stderr, "%s\n", ember_last_error());
		return 1;
	}
	enum { MAX = 4096 };
	static const char *names[MAX];
	static long counts[MAX];
	int nn = 0, rc;
	long stacks = 0, bad_stacks = 0;
	ember__jfr_event ev;
	while ((rc = ember__jfr_next_event(j, &ev)) == 1) {
		int k;
		for (k = 0; k < nn && strcmp(names[k], ev.type->name); k++)
			;
		if (k == nn && nn < MAX) {
			names[nn] = ev.type->name;
			counts[nn++] = 0;
		}
		if (k < MAX)
			counts[k]++;
		if (argc > 2 && !strcmp(ev.type->name, argv[2])) {
			const ember__jfr_value *fr =
				ember__jfr_get(ember__jfr_get(ev.value, "stackTrace"), "frames");
			int ok = fr && fr->kind == EMBER_JFR_ARRAY && fr->n > 0;
			for (uint32_t i = 0; ok && i < fr->n; i++) {
				const ember__jfr_value *m = ember__jfr_get(&fr->u.items[i], "method");
				ok = ember__jfr_get_str(ember__jfr_get(m, "name"), "string") != NULL;
			}
			stacks += ok;
			bad_stacks += !ok;
		}
	}
	if (rc < 0) {
		fprintf(stderr, "%s\n", ember_last_error());
		return 1;
	}
	for (int k = 0; k < nn; k++)
		printf("%s %ld\n", names[k], counts[k]);
	if (argc > 2)
		printf("%s stacks %s %ld\n", argv[2], bad_stacks ? "BAD" : "ok", stacks);
	ember__jfr_free(j);
	free(d);
	return 0;
}
