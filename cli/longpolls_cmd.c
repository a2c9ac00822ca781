/* SPDX-License-Identifier: Apache-2.0 */
/*
 * longpolls_cmd.c - `emberprof longpolls [--min MS] [--depth N] FILE...`:
 * the long polls recorded in emberprof's pprof files (samples labelled by
 * pollcatch) or in JFR recordings (emberprof's emberprof.LongPoll events,
 * async-profiler's tokio.PollcatchV1 events), longest first, each with the
 * stacks sampled inside it.
 * The decoding is tools/longpolls/decode.c and decode_jfr.c.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "emberprof.h"
#include "longpolls/decode.h"

#define DEFAULT_DEPTH 12

void ember__cli_longpolls_usage(FILE *out)
{
	fprintf(out,
		"usage: emberprof longpolls [--min MS] [--depth N] FILE...\n"
		"\n"
		"Lists the long polls found in FILEs, longest first, with the stacks sampled in\n"
		"each. FILEs are pprof profiles written by emberprof (samples labelled by\n"
		"ember_poll_begin/ember_poll_end), JFR recordings written by emberprof\n"
		"(emberprof.LongPoll events) or JFR recordings with tokio.PollcatchV1 events\n"
		"(async-profiler). Give one format of a run: the same poll would count twice.\n"
		"  --min MS     only polls of at least MS milliseconds (default 0: every poll the\n"
		"               files hold; emberprof labels only polls over its threshold)\n"
		"  --depth N    frames printed per stack (default %d)\n",
		DEFAULT_DEPTH);
}

static void print_poll(FILE *out, const ember__lp_poll *p, unsigned depth)
{
	fprintf(out, "poll %llu: %.3f ms%s, %llu sample%s",
		(unsigned long long)(p->id & ~(1ull << 63)), p->duration_ms,
		p->open ? " or more (still running)" : "", (unsigned long long)p->samples,
		p->samples == 1 ? "" : "s");
	if (p->tid >= 0)
		fprintf(out, ", thread %lld", (long long)p->tid);
	if (p->thread)
		fprintf(out, " (%s)", p->thread);
	fputc('\n', out);
	for (size_t s = 0; s < p->nstacks; s++) {
		const ember__lp_stack *st = &p->stacks[s];
		fprintf(out, "  %llu sample%s:\n", (unsigned long long)st->samples,
			st->samples == 1 ? "" : "s");
		if (!st->nframes)
			fprintf(out, "      (no stack)\n");
		for (uint32_t f = 0; f < st->nframes && f < depth; f++)
			fprintf(out, "      %s\n", st->frames[f]);
		if (st->nframes > depth)
			fprintf(out, "      ... %u more\n", st->nframes - depth);
	}
}

int ember__cli_longpolls(int argc, char **argv)
{
	double min_ms = 0;
	unsigned long depth = DEFAULT_DEPTH;
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			ember__cli_longpolls_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--min") || !strcmp(a, "--depth")) {
			if (i + 1 >= argc) {
				ember__cli_error("%s needs a value", a);
				ember__cli_longpolls_usage(stderr);
				return EMBER_EXIT_USAGE;
			}
			const char *v = argv[++i];
			if (!strcmp(a, "--min")) {
				char *end;
				min_ms = strtod(v, &end);
				if (end == v || *end || !(min_ms >= 0) || min_ms > 1e9) {
					ember__cli_error("--min '%s' is not a number of milliseconds", v);
					return EMBER_EXIT_USAGE;
				}
			} else if (ember__cli_parse_count(v, 1, 100000, &depth)) {
				ember__cli_error("--depth '%s' is not a number of frames, 1..100000", v);
				return EMBER_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (a[0] == '-' && a[1]) {
			ember__cli_error("unknown option '%s'", a);
			ember__cli_longpolls_usage(stderr);
			return EMBER_EXIT_USAGE;
		} else {
			break;
		}
	}
	if (i >= argc) {
		ember__cli_error("longpolls needs at least one FILE");
		ember__cli_longpolls_usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	ember__longpolls lp;
	ember__longpolls_init(&lp);
	int status = 0;
	for (; i < argc; i++)
		if (ember__longpolls_add_file(&lp, argv[i]) != 0) {
			ember__cli_error("%s", ember_last_error());
			status = 1;
		}
	ember__longpolls_sort(&lp);
	size_t shown = 0;
	for (size_t k = 0; k < lp.n; k++)
		if (lp.polls[k].duration_ms >= min_ms) {
			print_poll(stdout, &lp.polls[k], (unsigned)depth);
			shown++;
		}
	if (!shown)
		printf("no long polls%s\n", lp.n ? " over --min" : "");
	ember__longpolls_free(&lp);
	return status;
}
