/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_names.c - names for a tree-engine run's windows from debuginfod
 * while the run goes on (cli.h, docs/design/debuginfod.md "Per window"):
 * a background fetcher (tools/debuginfod/dbgd_bg.h) asked by an offline
 * symbolizer in background mode (tools/symbolize/, which names a
 * profile's unnamed locations with what has arrived), wired into the
 * engine's naming hooks (tools/tree/tree_engine.h); and the symbolizers'
 * file hook (symbols/debugfile.h) answering with the files that arrived,
 * so that the engine's own symbolizers, made anew, read them.
 *
 * The engine's thread (the CLI's main thread) only; the fetches run on the
 * fetcher's threads. Not async-signal-safe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debuginfod/dbgd_bg.h"
#include "emberprof.h"
#include "symbolize/symbolize.h"
#include "symbols/debugfile.h"
#include "util/error.h"
#include "tree/tree_engine.h"

struct ember__cli_tree_names {
	ember__dbgd_bg *bg;
	ember__symz *z;
	int verbose;
	uint64_t renamed; /* profiles the offline naming changed */
};

/* The engine's symbolizers: a debug file that has arrived, never asking
 * (only the modules a profile lacks names in are asked for, by name_cb). */
static char *hook_find_debug(void *arg, const char *path, const char *build_id)
{
	ember__cli_tree_names *n = arg;
	char *p = NULL;
	(void)path;
	if (build_id && build_id[0])
		(void)ember__dbgd_bg_peek(n->bg, build_id, &p);
	return p;
}

static void set_hooks(ember__cli_tree_names *n)
{
	ember__debugfile_hooks h = {hook_find_debug, NULL, n};
	ember__debugfile_set_hooks(n ? &h : NULL);
}

static int name_cb(void *arg, ember__profile *prof)
{
	ember__cli_tree_names *n = arg;
	int changed;
	int rc = ember__symz_profile(n->z, prof, &changed);
	set_hooks(n); /* (the offline symbolizer set its own, then none) */
	n->renamed += changed != 0;
	if (rc)
		return rc;
	size_t pending = ember__symz_pending(n->z);
	return pending > 1000 ? 1000 : (int)pending;
}

static uint64_t answered_cb(void *arg)
{
	ember__cli_tree_names *n = arg;
	return ember__dbgd_bg_answered(n->bg);
}

int ember__cli_tree_names_new(ember__cli_tree_names **out, struct ember__tree *t, int lines,
			      int verbose)
{
	*out = NULL;
	const char *sym = getenv("EMBERPROF_SYMBOLIZE");
	if ((sym && !strcmp(sym, "0")) || !ember__dbgd_configured(NULL))
		return 0;
	ember__cli_tree_names *n = calloc(1, sizeof(*n));
	if (!n)
		return ember__error_oom("debuginfod during the run");
	n->verbose = verbose;
	ember__dbgd_opts dopts = {
		.total_ms = ember__cli_debuginfod_ms("EMBERPROF_DEBUGINFOD_TIMEOUT", 30000, 1000, 1,
						     86400)};
	int rc = ember__dbgd_bg_new(&n->bg, &dopts);
	if (rc == 0) {
		ember__symz_opts zo = {.debuginfod = 1, .bg = n->bg, .lines = lines};
		rc = ember__symz_new(&n->z, &zo);
	}
	if (rc) {
		/* the pass after the program says it again, and tries then */
		ember__cli_error("run: debuginfod during the run: %s", ember_last_error());
		ember__cli_tree_names_end(n, t);
		return 0;
	}
	ember__tree_names h = {
		.name = name_cb,
		.answered = answered_cb,
		.arg = n,
		.wait_ms = ember__cli_debuginfod_ms("EMBERPROF_DEBUGINFOD_WAIT", 2000, 1, 0, 600000),
	};
	ember__tree_set_names(t, &h);
	set_hooks(n);
	*out = n;
	return 0;
}

void ember__cli_tree_names_end(ember__cli_tree_names *n, struct ember__tree *t)
{
	if (!n)
		return;
	if (t)
		ember__tree_set_names(t, NULL);
	ember__debugfile_set_hooks(NULL);
	if (n->bg) {
		ember__dbgd_stats st;
		ember__dbgd_bg_stop(n->bg); /* the batch under way answered: its failures too */
		ember__dbgd_bg_stats(n->bg, &st);
		if (n->verbose)
			fprintf(stderr, "emberprof: debuginfod during the run: %llu debug file(s) "
					"fetched, %llu window profile(s) named after they were made\n",
				(unsigned long long)ember__dbgd_bg_arrived(n->bg),
				(unsigned long long)n->renamed);
		if (st.last_error[0])
			ember__cli_error("run: debuginfod during the run: %llu debug file(s) not "
					 "fetched (%llu timed out); last: %s",
					 (unsigned long long)(st.missing + st.failed + st.timed_out),
					 (unsigned long long)st.timed_out, st.last_error);
	}
	ember__symz_free(n->z);
	ember__dbgd_bg_free(n->bg);
	free(n);
}
