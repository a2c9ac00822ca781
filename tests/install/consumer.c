/* SPDX-License-Identifier: Apache-2.0 */
/*
 * consumer.c - a program using the installed emberprof as any user would:
 * #include <emberprof.h>, link -lemberprof (pkg-config or the CMake
 * package). It builds an agent with a local reporter into argv[1], runs it
 * while burning some CPU, stops it and checks the version macros agree
 * with the library. Exit 0 on success; messages on stderr.
 */
#include <emberprof.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static volatile double sink;

static void burn(double seconds)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink = sink * 1.0000001 + i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

#define CHECK(call)                                                                    \
	do {                                                                           \
		if ((call) != EMBER_OK) {                                              \
			fprintf(stderr, "consumer: %s failed: %s\n", #call, ember_last_error()); \
			return 1;                                                      \
		}                                                                      \
	} while (0)

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: consumer OUTDIR\n");
		return 2;
	}
	if (strcmp(ember_version(), EMBER_VERSION_STRING) != 0) {
		fprintf(stderr, "consumer: header says %s, library says %s\n", EMBER_VERSION_STRING,
			ember_version());
		return 1;
	}
	ember_builder *b;
	ember_agent *a;
	ember_running *r;
	ember_reporter rep;
	CHECK(ember_builder_new(&b, "consumer"));
	CHECK(ember_builder_set_interval_ms(b, 200));
	CHECK(ember_reporter_local(&rep, argv[1]));
	CHECK(ember_builder_add_reporter(b, &rep));
	CHECK(ember_builder_build(&a, b));
	CHECK(ember_agent_start(&r, a));
	burn(0.5);
	CHECK(ember_running_stop(&a, r));
	ember_agent_shutdown(a);
	printf("consumer: emberprof %s ok\n", ember_version());
	return 0;
}
