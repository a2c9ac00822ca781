/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolize_cmd.c - `emberprof symbolize`: names for the frames of pprof
 * files and JFR recordings already written (tools/symbolize/), from local debug files,
 * --debug-dir trees, a sysroot or debuginfod; and `run`'s pass over the
 * files it wrote when debuginfod is configured.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "emberprof.h"
#include "report/local.h"
#include "symbols/symbolizer.h"
#include "symbolize/symbolize.h"

void ember__cli_symbolize_usage(FILE *out)
{
	fprintf(out,
		"usage: emberprof symbolize [options] FILE...\n"
		"\n"
		"Adds function names, file:line and inlined frames to pprof files and JFR\n"
		"recordings written without them (EMBERPROF_SYMBOLIZE=0, stripped programs,\n"
		"another machine), in place (through a temporary file renamed over each) or\n"
		"into -o. Frames that have a name already are kept; placeholders are replaced:\n"
		"module+0xOFFSET in pprof, module.0xOFFSET in JFR (there with the line number,\n"
		"JFR frames have no file; every other event is kept byte for byte). Running it\n"
		"again changes nothing.\n"
		"\n"
		"Options:\n"
		"      --debug-dir DIR      also look for debug files in DIR: DIR/.build-id/xx/\n"
		"                           rest.debug, DIR/<path>.debug, DIR/<path>; repeatable\n"
		"      --sysroot DIR        read the profiled modules' files under DIR (and\n"
		"                           DIR/usr/lib/debug)\n"
		"      --debuginfod URLS    fetch debug files by build id from these servers\n"
		"                           (default: $DEBUGINFOD_URLS; cached as perf and gdb\n"
		"                           cache them, DEBUGINFOD_CACHE_PATH)\n"
		"      --no-debuginfod      never ask debuginfod\n"
		"      --timeout SECONDS    at most this long for all debuginfod fetches (60)\n"
		"      --lines app|all|none file/line for the program's own code, every module,\n"
		"                           or none (app, as `run`)\n"
		"  -o, --output FILE        write the result here (one FILE only)\n"
		"  -q, --quiet              no summary line\n");
}

typedef struct sym_args {
	const char **dirs;
	size_t ndirs;
	const char *sysroot, *urls, *out;
	int no_debuginfod, quiet, lines;
	unsigned long timeout_s;
	char **files;
	size_t nfiles;
} sym_args;

/* -1 to go on, else the exit code. */
static int parse_sym_args(int argc, char **argv, sym_args *a)
{
	int only_files = 0;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *v = NULL;
		if (only_files || arg[0] != '-' || arg[1] == '\0') {
			a->files[a->nfiles++] = argv[i];
		} else if (!strcmp(arg, "--")) {
			only_files = 1;
		} else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			ember__cli_symbolize_usage(stdout);
			return 0;
		} else if (ember__cli_is_opt(arg, "--debug-dir")) {
			if (!(v = ember__cli_opt_value("symbolize", argc, argv, &i, "--debug-dir")))
				return EMBER_EXIT_USAGE;
			a->dirs[a->ndirs++] = v;
		} else if (ember__cli_is_opt(arg, "--sysroot")) {
			if (!(a->sysroot = ember__cli_opt_value("symbolize", argc, argv, &i, "--sysroot")))
				return EMBER_EXIT_USAGE;
		} else if (ember__cli_is_opt(arg, "--debuginfod")) {
			if (!(a->urls = ember__cli_opt_value("symbolize", argc, argv, &i, "--debuginfod")))
				return EMBER_EXIT_USAGE;
		} else if (!strcmp(arg, "--no-debuginfod")) {
			a->no_debuginfod = 1;
		} else if (ember__cli_is_opt(arg, "--timeout")) {
			if (!(v = ember__cli_opt_value("symbolize", argc, argv, &i, "--timeout")))
				return EMBER_EXIT_USAGE;
			if (ember__cli_parse_count(v, 1, 86400, &a->timeout_s) < 0) {
				ember__cli_error("symbolize: --timeout \"%s\" is invalid: expected "
						 "seconds, 1..86400", v);
				return EMBER_EXIT_USAGE;
			}
		} else if (ember__cli_is_opt(arg, "--lines")) {
			if (!(v = ember__cli_opt_value("symbolize", argc, argv, &i, "--lines")))
				return EMBER_EXIT_USAGE;
			if (!strcmp(v, "app"))
				a->lines = EMBER__LINES_APP;
			else if (!strcmp(v, "all"))
				a->lines = EMBER__LINES_ALL;
			else if (!strcmp(v, "none"))
				a->lines = EMBER__LINES_NONE;
			else {
				ember__cli_error("symbolize: --lines \"%s\" is invalid: expected app, "
						 "all or none", v);
				return EMBER_EXIT_USAGE;
			}
		} else if (ember__cli_is_opt(arg, "--output") || !strcmp(arg, "-o")) {
			if (!(a->out = ember__cli_opt_value("symbolize", argc, argv, &i, "--output")))
				return EMBER_EXIT_USAGE;
		} else if (!strcmp(arg, "--quiet") || !strcmp(arg, "-q")) {
			a->quiet = 1;
		} else {
			ember__cli_error("symbolize: unknown option '%s'", arg);
			ember__cli_symbolize_usage(stderr);
			return EMBER_EXIT_USAGE;
		}
	}
	if (a->nfiles == 0) {
		ember__cli_error("symbolize: no profile files given");
		ember__cli_symbolize_usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	if (a->out && a->nfiles != 1) {
		ember__cli_error("symbolize: -o takes one FILE, %zu were given", a->nfiles);
		return EMBER_EXIT_USAGE;
	}
	return -1;
}

/* Names files[0..n) (into out when given); 0 or the number of files that
 * failed. Says what happened on stderr unless quiet. */
static int symbolize_files(const ember__symz_opts *o, char *const *files, size_t n,
			   const char *out, int quiet, const char *who)
{
	ember__symz *z;
	if (ember__symz_new(&z, o) != 0) {
		ember__cli_error("%s: %s", who, ember_last_error());
		return (int)n;
	}
	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		int changed;
		if (ember__symz_file(z, files[i], out, &changed) != 0) {
			ember__cli_error("%s: %s", who, ember_last_error());
			failed++;
		}
	}
	const ember__symz_stats *st = ember__symz_get_stats(z);
	const char *problem = ember__symz_dbgd_problem(z);
	if (problem)
		ember__cli_error("%s: %s", who, problem);
	if (!quiet)
		fprintf(stderr,
			"emberprof: %s: %llu file(s), %llu rewritten; %llu location(s) named, "
			"%llu named before, %llu without a name\n",
			who, (unsigned long long)st->files, (unsigned long long)st->rewritten,
			(unsigned long long)st->named, (unsigned long long)st->kept,
			(unsigned long long)st->unnamed);
	ember__symz_free(z);
	return failed;
}

int ember__cli_symbolize(int argc, char **argv)
{
	sym_args a = {.timeout_s = 60, .lines = EMBER__LINES_APP};
	a.dirs = calloc((size_t)argc + 1, sizeof(*a.dirs));
	a.files = calloc((size_t)argc + 1, sizeof(*a.files));
	if (!a.dirs || !a.files) {
		free(a.dirs);
		free(a.files);
		ember__cli_error("out of memory");
		return EMBER_EXIT_INTERNAL;
	}
	int code = parse_sym_args(argc, argv, &a);
	if (code < 0) {
		ember__symz_opts o = {
			.debug_dirs = a.dirs,
			.ndebug_dirs = a.ndirs,
			.sysroot = a.sysroot,
			.debuginfod = !a.no_debuginfod,
			/* asked by the user now: failures remembered are asked again */
			.dbgd = {.urls = a.urls, .total_ms = (int64_t)a.timeout_s * 1000,
				 .retry = 1},
			.lines = a.lines,
		};
		code = symbolize_files(&o, a.files, a.nfiles, a.out, a.quiet, "symbolize") ? 1 : 0;
	}
	free(a.dirs);
	free(a.files);
	return code;
}

/* Appends dir/NAME for the names of `now` not in `before`; -1 on OOM. */
static int add_new(char **files, size_t *n, const char *dir, const ember__cli_names *now,
		   const ember__cli_names *before)
{
	for (size_t i = 0; i < now->n; i++) {
		if (before && ember__cli_names_has(before, now->v[i]))
			continue;
		size_t len = strlen(dir) + strlen(now->v[i]) + 2;
		if (!(files[*n] = malloc(len)))
			return -1;
		snprintf(files[(*n)++], len, "%s/%s", dir, now->v[i]);
	}
	return 0;
}

int64_t ember__cli_debuginfod_ms(const char *var, int64_t deflt_ms, int64_t unit_ms,
				 unsigned long min, unsigned long max)
{
	unsigned long v = 0;
	const char *t = getenv(var);
	if (!t || !*t)
		return deflt_ms;
	if (ember__cli_parse_count(t, min, max, &v) < 0) {
		ember__cli_error("run: %s \"%s\" is invalid: expected %s, %lu..%lu; %lld used", var,
				 t, unit_ms == 1000 ? "seconds" : "milliseconds", min, max,
				 (long long)(deflt_ms / unit_ms));
		return deflt_ms;
	}
	return (int64_t)v * unit_ms;
}

int ember__cli_symbolize_new_files(const char *dir, const struct ember__cli_names *before,
				   const struct ember__cli_names *jfr_before, const char *lines,
				   int quiet)
{
	if (!ember__dbgd_configured(NULL))
		return 0;
	ember__cli_names now = {0}, jfr_now = {0};
	if (ember__cli_list_profiles(dir, &now) < 0 ||
	    ember__cli_list_files(dir, EMBER_LOCAL_JFR_SUFFIX, &jfr_now) < 0) {
		ember__cli_error("run: %s", ember_last_error());
		ember__cli_names_free(&now);
		return -1;
	}
	char **files = calloc(now.n + jfr_now.n + 1, sizeof(*files));
	size_t n = 0;
	if (!files || add_new(files, &n, dir, &now, before) < 0 ||
	    add_new(files, &n, dir, &jfr_now, jfr_before) < 0)
		ember__cli_error("run: out of memory: not every new file is symbolized");
	int failed = 0;
	if (files && n) {
		int policy = lines && !strcmp(lines, "all")    ? EMBER__LINES_ALL
			     : lines && !strcmp(lines, "none") ? EMBER__LINES_NONE
							       : EMBER__LINES_APP;
		/* after the program: bounded, and failures remembered for the
		 * next runs (`emberprof symbolize` asks again) */
		ember__symz_opts o = {.debuginfod = 1,
				      .dbgd = {.total_ms = ember__cli_debuginfod_ms(
						       "EMBERPROF_DEBUGINFOD_TIMEOUT", 30000, 1000, 1, 86400)},
				      .lines = policy};
		failed = symbolize_files(&o, files, n, NULL, quiet, "run: debuginfod");
	}
	for (size_t i = 0; files && i < n; i++)
		free(files[i]);
	free(files);
	ember__cli_names_free(&now);
	ember__cli_names_free(&jfr_now);
	return failed ? -1 : 0;
}
