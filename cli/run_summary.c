/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_summary.c - what `emberprof run` says once the program has ended:
 * how many profiles (and JFR recordings) it wrote where, the tables of
 * their top functions (CPU, wall clock, allocations), the flame graph
 * pages asked for, or, when nothing was written, a hint at why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "emberprof.h"
#include "encode/pprof.h"
#include "report/local.h"

enum { PROFILE_CPU = 1, PROFILE_WALL = 2, PROFILE_MEMORY = 4 };

/* Has profile p a sample type named t? */
static int has_type(const ember__profile *p, const char *t)
{
	for (uint32_t i = 0; i < p->nvalues; i++)
		if (p->sample_type[i].type && !strcmp(p->sample_type[i].type, t))
			return 1;
	return 0;
}

/* What a profile file holds (PROFILE_* bits), by its sample types: our
 * pprof files hold one kind each (samples + cpu, samples + wall, or
 * alloc_objects, alloc_space, ...), a JFR recording up to three (cpu, wall,
 * alloc_space). Anything else counts as CPU. */
static int profile_kinds(const char *path)
{
	ember__profile *p = NULL;
	if (ember__cli_read_profile(path, &p) < 0)
		return PROFILE_CPU; /* the table reports the error */
	int kinds = (has_type(p, "wall") ? PROFILE_WALL : 0) |
		    (has_type(p, "alloc_space") ? PROFILE_MEMORY : 0) |
		    (has_type(p, "cpu") ? PROFILE_CPU : 0);
	ember__profile_free(p);
	return kinds ? kinds : PROFILE_CPU;
}

/* Prints the CPU table and, if the run wrote wall-clock profiles, theirs. */
static void print_tables(const ember__cli_summary *o, char **paths, size_t n)
{
	char **wall = calloc(n ? n : 1, sizeof(*wall));
	char **cpu = calloc(n ? n : 1, sizeof(*cpu));
	char **mem = calloc(n ? n : 1, sizeof(*mem));
	size_t nw = 0, nc = 0, nm = 0;
	if (!wall || !cpu || !mem) {
		ember__cli_error("out of memory");
		free(wall);
		free(cpu);
		free(mem);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		int kinds = profile_kinds(paths[i]);
		if (kinds & PROFILE_WALL)
			wall[nw++] = paths[i];
		if (kinds & PROFILE_MEMORY)
			mem[nm++] = paths[i];
		if (kinds & PROFILE_CPU)
			cpu[nc++] = paths[i];
	}
	fputc('\n', stderr);
	if (nc && ember__cli_print_top_names(cpu, nc, "cpu", o->top, stderr, 1, NULL, "cpu") < 0)
		ember__cli_error("%s", ember_last_error());
	if (nw) {
		fprintf(stderr, "\nwall-clock time:\n");
		if (ember__cli_print_top(wall, nw, "wall", o->top, stderr, 1, NULL) < 0)
			ember__cli_error("%s", ember_last_error());
	}
	if (nm) {
		fprintf(stderr, "\nbytes allocated (alloc_space):\n");
		if (ember__cli_print_top(mem, nm, "alloc_space", o->top, stderr, 1, NULL) < 0)
			ember__cli_error("%s", ember_last_error());
	}
	free(wall);
	free(cpu);
	free(mem);
}

/*
 * The files with `suffix` in dir that are not in `before`, as malloc'd
 * "dir/name" paths in a malloc'd array (*paths, *n; the caller frees
 * both). 0, or -1 on error (printed).
 */
static int new_files(const char *dir, const char *suffix, const ember__cli_names *before,
		     char ***paths, size_t *n)
{
	ember__cli_names after = { 0 };
	*paths = NULL;
	*n = 0;
	if (ember__cli_list_files(dir, suffix, &after) < 0) {
		ember__cli_error("%s", ember_last_error());
		return -1;
	}
	char **v = calloc(after.n ? after.n : 1, sizeof(*v));
	size_t k = 0;
	for (size_t i = 0; v && i < after.n; i++) {
		if (ember__cli_names_has(before, after.v[i]))
			continue;
		size_t len = strlen(dir) + strlen(after.v[i]) + 2;
		if (!(v[k] = malloc(len)))
			break;
		snprintf(v[k++], len, "%s/%s", dir, after.v[i]);
	}
	ember__cli_names_free(&after);
	if (!v) {
		ember__cli_error("out of memory");
		return -1;
	}
	*paths = v;
	*n = k;
	return 0;
}

static void free_paths(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/*
 * After "no profiles were written": why, as far as the end of CMD's
 * process tells (ember__cli_last_child): it exec'd into another program,
 * its children used CPU, or it used too little CPU for a sample.
 */
static void hint_no_profile(const char *cmd, int tree, int follow)
{
	ember__cli_child_end e;
	ember__cli_last_child(&e);
	if (!e.known)
		return;
	const char *base = strrchr(cmd, '/');
	base = base ? base + 1 : cmd;
	int execd = strncmp(e.comm, base, 15) != 0;
	const char *rate = getenv("EMBERPROF_SAMPLE_RATE");
	double hz = rate && atof(rate) > 0 ? atof(rate) : 100;
	if (tree) {
		/* sampled from outside: what the engine counted, as its log
		 * line (--log-level info) says it */
		ember__cli_tree_end te;
		ember__cli_tree_last(&te);
		if (!te.valid)
			return;
		if (te.report_failures)
			ember__cli_error("hint: the tree engine made %llu profile%s of %llu processes "
					 "(%.3f s of CPU in samples, %.3f s more in no sample), and "
					 "the reporters failed %llu time%s: the log says why",
					 te.profiles, te.profiles == 1 ? "" : "s", te.processes,
					 te.sampled_s, te.unsampled_s, te.report_failures,
					 te.report_failures == 1 ? "" : "s");
		else if (te.processes == 0)
			ember__cli_error("hint: the tree engine saw no process of %s: its perf events "
					 "start at the command's exec, and none was recorded",
					 base);
		else
			ember__cli_error("hint: the tree engine saw %llu process%s and their perf "
					 "events counted %.3f s of CPU (%.3f s in %llu samples)%s: "
					 "nothing to profile",
					 te.processes, te.processes == 1 ? "" : "es",
					 te.sampled_s + te.unsampled_s, te.sampled_s, te.samples,
					 te.user_only ? ", user mode only (perf_event_paranoid 2)"
						      : "");
		(void)hz;
		(void)e;
		return;
	}
	if (!follow && e.children_cpu_s > 0) {
		ember__cli_error("hint: %s's child processes used %.2f s of CPU, and "
				 "--no-follow-children (EMBERPROF_FOLLOW_CHILDREN=0) profiles only the "
				 "process it started as: run without it to profile them",
				 base, e.children_cpu_s);
		return;
	}
	if (e.cpu_s + e.children_cpu_s < 2 / hz) {
		ember__cli_error("hint: %s%s%s%s used only %.0f ms of CPU (its children it waited "
				 "for included): less than a sample at %.0f Hz; sample more often "
				 "(--rate) or profile a longer run",
				 base, execd ? " (which exec'd into " : "", execd ? e.comm : "",
				 execd ? ")" : "", (e.cpu_s + e.children_cpu_s) * 1000, hz);
		return;
	}
	if (execd)
		ember__cli_error("hint: %s exec'd into '%s', which used %.2f s of CPU but wrote no "
				 "profile: a statically linked or set-user-ID program ignores "
				 "LD_PRELOAD, and a program that clears its environment drops it",
				 base, e.comm, e.cpu_s);
	else if (e.children_cpu_s > 0)
		ember__cli_error("hint: %s's child processes used %.2f s of CPU in all but wrote "
				 "no profile: processes of a few ms each (most of it before the "
				 "agent starts) may take no sample; a statically linked or "
				 "set-user-ID program ignores LD_PRELOAD, and a program that clears "
				 "its environment drops it",
				 base, e.children_cpu_s);
	else
		ember__cli_error("hint: %s used %.2f s of CPU but no process wrote a profile: a "
				 "statically linked or set-user-ID program (or interpreter) ignores "
				 "LD_PRELOAD, and a process still running in the background (a daemon) "
				 "writes its profiles when it ends, after this summary",
				 base, e.cpu_s);
}

void ember__cli_summarize(const ember__cli_summary *o, const ember__cli_names *before,
			  const ember__cli_names *jfr_before)
{
	const char *dir = o->dir, *cmd = o->cmd;
	int killed_by = o->killed_by;
	char **jfr = NULL, **paths = NULL;
	size_t njfr = 0, n = 0;
	if (new_files(dir, EMBER_LOCAL_JFR_SUFFIX, jfr_before, &jfr, &njfr) == 0 && njfr > 0)
		fprintf(stderr, "emberprof: %zu JFR recording%s written to %s\n", njfr,
			njfr == 1 ? "" : "s", dir);
	if (new_files(dir, EMBER_LOCAL_SUFFIX, before, &paths, &n) < 0) {
		free_paths(jfr, njfr);
		return;
	}
	if (n == 0 && njfr > 0) {
		/* JFR only (--format jfr, or async-profiler): the tables from
		 * the recordings */
		if (!o->quiet)
			print_tables(o, jfr, njfr);
		if (o->flame)
			ember__cli_run_flames(dir, jfr, njfr);
	} else if (n == 0) {
		ember__cli_error("no profiles were written to %s%s", dir,
				 killed_by ? " (a program killed by a signal cannot write its last "
					     "window)"
					   : "");
		if (!killed_by)
			hint_no_profile(cmd, o->tree, o->follow);
	} else {
		fprintf(stderr, "emberprof: %zu profile%s written to %s\n", n, n == 1 ? "" : "s",
			dir);
		if (!o->quiet)
			print_tables(o, paths, n);
		if (o->flame)
			ember__cli_run_flames(dir, paths, n);
	}
	free_paths(paths, n);
	free_paths(jfr, njfr);
}

