/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flame_cmd.c - `emberprof flame` (a flame graph page, or folded stacks,
 * of any mix of pprof files and JFR recordings), `emberprof diff` (the
 * differential page and the table of significant changes) and the pages
 * `emberprof run --flame` writes. The tree, the page and the statistics
 * are tools/flame/; this file parses options, reads files and reports.
 *
 * Exit codes: 0; 2 for a usage error or an input that cannot be used (the
 * message names the file and the problem); 1 if the output cannot be
 * written; 3 from diff --fail-above.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "emberprof.h"
#include "flame/flame.h"
#include "flame/flame_diff.h"
#include "util/error.h"

#define EXIT_FAIL_ABOVE 3
#define DIFF_ROWS 20

void ember__cli_flame_usage(FILE *out)
{
	fprintf(out,
		"usage: emberprof flame [options] FILE... [-o OUT]\n"
		"\n"
		"Merges the FILEs (pprof profiles, gzip'd or not, and JFR recordings, ours or\n"
		"async-profiler's) and writes one self-contained HTML page: a flame graph with\n"
		"zoom, search and hover details, a table of functions, callers/callees of a\n"
		"function, label filters and a sample type selector. It needs no network.\n"
		"  -o, --output OUT     the file to write (default flame.html; '-' is stdout)\n"
		"      --type NAME      only this sample type (e.g. cpu, wall, alloc_space)\n"
		"      --where K=V      only samples with label K equal to V; repeatable (all\n"
		"                       must hold), e.g. --where thread_name=worker\n"
		"      --title T        the page's title\n"
		"      --reverse        leaf-rooted: the hottest functions at the root\n"
		"      --min PCT        leave out frames below PCT%% of the total (their time\n"
		"                       stays in their callers' totals)\n"
		"      --folded         write Brendan Gregg's folded stacks (the default or\n"
		"                       --type sample type) instead of HTML (default OUT: '-')\n"
		"Exit status: 0; 2 for bad options or unusable input; 1 if OUT cannot be written.\n");
}

void ember__cli_diff_usage(FILE *out)
{
	fprintf(out,
		"usage: emberprof diff --base FILE... --new FILE... [options]\n"
		"\n"
		"Compares the merged NEW profiles with the merged BASE profiles, each as shares\n"
		"of its own total: writes a differential flame graph of NEW (red grew, blue\n"
		"shrank) and prints the functions whose self share changed most, in percentage\n"
		"points, with a two-proportion z-test on the sample counts: a change within the\n"
		"noise of sampling is marked 'noise'.\n"
		"  -o, --output OUT     the page to write (default diff.html; '-' is stdout)\n"
		"      --type NAME      the sample type to compare (default: the base's default)\n"
		"      --where K=V      only samples with label K equal to V; repeatable\n"
		"      --title T        the page's title\n"
		"  -n, --n N            rows of the table (default %d)\n"
		"      --fail-above PP  exit with 3 when a significant change of a function's self\n"
		"                       share exceeds PP percentage points (a CI gate)\n"
		"Exit status: 0; 3 (--fail-above); 2 for bad options or unusable input, e.g.\n"
		"profiles without the sample type; 1 if OUT cannot be written.\n",
		DIFF_ROWS);
}

/* Reads a profile, refusing an empty file with a clear message. */
static int read_input(const char *path, ember__profile **out)
{
	struct stat st;
	*out = NULL;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
		return ember__error(EMBER_ERR_FORMAT, "'%s' is empty (0 bytes): not a profile", path);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return ember__error(EMBER_ERR_INVALID, "'%s' is a directory, not a profile file",
				    path);
	return ember__cli_read_profile_named(path, out);
}

/* The sample type a file is shown in by default (as `top` picks it). */
static const char *default_type(const ember__profile *p)
{
	if (p->nvalues == 0)
		return NULL;
	if (p->default_sample_type && *p->default_sample_type)
		for (uint32_t i = 0; i < p->nvalues; i++)
			if (p->sample_type[i].type &&
			    !strcmp(p->sample_type[i].type, p->default_sample_type))
				return p->default_sample_type;
	return p->sample_type[p->nvalues - 1].type;
}

/*
 * Adds the files to set `set`. Files without samples are skipped unless
 * all are; *type_buf receives the default type of the first file when the
 * tree has no type yet and needs one (a diff). 0 or a negative ember_err.
 */
static int add_files(ember__flame **flp, const ember__flame_opts *opts, char *const *paths,
		     size_t n, int set, char *type_buf, size_t type_size)
{
	size_t empty = 0;
	for (size_t i = 0; i < n; i++) {
		ember__profile *p = NULL;
		int rc = read_input(paths[i], &p);
		if (rc < 0)
			return rc;
		if (!*flp) {
			ember__flame_opts o = *opts;
			if (o.diff && !o.type) {
				const char *t = default_type(p);
				snprintf(type_buf, type_size, "%s", t ? t : "");
				o.type = type_buf;
			}
			if (!(*flp = ember__flame_new(&o))) {
				ember__profile_free(p);
				return ember__error_oom("flame graph");
			}
		}
		if (p->nsamples == 0 && p->nvalues > 0) {
			empty++;
			ember__profile_free(p);
			continue;
		}
		rc = ember__flame_add(*flp, p, paths[i], set);
		ember__profile_free(p);
		if (rc < 0)
			return rc;
	}
	if (empty == n) {
		if (n == 1)
			return ember__error(EMBER_ERR_FORMAT, "'%s' is empty: it has no samples",
					    paths[0]);
		return ember__error(EMBER_ERR_FORMAT, "none of the %zu files has samples (the first: '%s')",
				    n, paths[0]);
	}
	return 0;
}

/* Checks that the tree has something to show in set `set`. */
static int check_nonempty(const ember__flame *fl, int set, const char *what)
{
	if (fl->nsamples > 0 && ember__flame_total(fl, set, fl->default_type) != 0)
		return 0;
	if (fl->opts.nwhere)
		return ember__error(EMBER_ERR_FORMAT, "no sample of the %s profiles has the --where labels",
				    what);
	return ember__error(EMBER_ERR_FORMAT, "the %s profiles have no samples of type '%s'", what,
			    fl->ntypes ? fl->strings[fl->type_name[fl->default_type]] : "?");
}

/* Opens OUT ('-' is stdout). */
static FILE *open_out(const char *path)
{
	if (!strcmp(path, "-"))
		return stdout;
	FILE *f = fopen(path, "w");
	if (!f)
		ember__error_errno(EMBER_ERR_IO, errno, "cannot create '%s'", path);
	else
		setvbuf(f, NULL, _IOFBF, 1 << 20);
	return f;
}

static int close_out(FILE *f, const char *path)
{
	int bad = ferror(f);
	if (f == stdout)
		bad |= fflush(f) != 0;
	else
		bad |= fclose(f) != 0;
	return bad ? ember__error(EMBER_ERR_IO, "cannot write '%s'", path) : 0;
}

/* Writes the page (or folded stacks) of fl to path; 0, or an exit code. */
static int write_output(const ember__flame *fl, const ember__flame_diff *d, const char *path,
			int folded)
{
	FILE *f = open_out(path);
	if (!f) {
		ember__cli_error("%s", ember_last_error());
		return 1;
	}
	int rc = folded ? ember__flame_write_folded(fl, f) : ember__flame_write_html(fl, d, f);
	int crc = close_out(f, path);
	if (rc < 0 || crc < 0) {
		ember__cli_error("%s", ember_last_error());
		return 1;
	}
	return 0;
}

/* ---- option parsing shared by flame and diff ---- */

typedef struct args {
	ember__flame_opts opts;
	const char *out;
	int folded;
	char **files[2]; /* flame: files[0]; diff: [0] new, [1] base */
	size_t nfiles[2];
	double fail_above; /* < 0: none */
	unsigned long rows;
} args;

static int parse_pct(const char *cmd, const char *name, const char *v, double *out)
{
	char *end;
	double d = strtod(v, &end);
	if (end == v || *end || !(d >= 0 && d <= 100)) {
		ember__cli_error("%s: %s \"%s\" is invalid: expected a percentage, 0..100", cmd, name,
				 v);
		return -1;
	}
	*out = d;
	return 0;
}

/* Parses argv; returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, args *a, int diff)
{
	const char *cmd = diff ? "diff" : "flame";
	void (*usage)(FILE *) = diff ? ember__cli_diff_usage : ember__cli_flame_usage;
	int only_files = 0, set = diff ? -1 : 0;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *v = NULL;
		if (only_files || arg[0] != '-' || arg[1] == '\0') {
			if (set < 0) {
				ember__cli_error("diff: '%s': say --base or --new before the files", arg);
				return EMBER_EXIT_USAGE;
			}
			a->files[set][a->nfiles[set]++] = argv[i];
		} else if (!strcmp(arg, "--")) {
			only_files = 1;
		} else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			usage(stdout);
			return 0;
		} else if (diff && !strcmp(arg, "--base")) {
			set = 1;
		} else if (diff && !strcmp(arg, "--new")) {
			set = 0;
		} else if (ember__cli_is_opt(arg, "--output") || ember__cli_is_opt(arg, "-o")) {
			if (!(a->out = ember__cli_opt_value(cmd, argc, argv, &i, "--output")))
				return EMBER_EXIT_USAGE;
		} else if (ember__cli_is_opt(arg, "--type")) {
			if (!(a->opts.type = ember__cli_opt_value(cmd, argc, argv, &i, "--type")))
				return EMBER_EXIT_USAGE;
		} else if (ember__cli_is_opt(arg, "--title")) {
			if (!(a->opts.title = ember__cli_opt_value(cmd, argc, argv, &i, "--title")))
				return EMBER_EXIT_USAGE;
		} else if (ember__cli_is_opt(arg, "--where")) {
			if (!(v = ember__cli_opt_value(cmd, argc, argv, &i, "--where")))
				return EMBER_EXIT_USAGE;
			const char *eq = strchr(v, '=');
			if (!eq || eq == v || a->opts.nwhere == EMBER_FLAME_MAX_WHERE) {
				ember__cli_error("%s: --where \"%s\" is invalid: expected KEY=VALUE (at "
						 "most %d)",
						 cmd, v, EMBER_FLAME_MAX_WHERE);
				return EMBER_EXIT_USAGE;
			}
			char *key = strndup(v, (size_t)(eq - v)); /* freed at exit */
			if (!key)
				return EMBER_EXIT_INTERNAL;
			a->opts.where_key[a->opts.nwhere] = key;
			a->opts.where_val[a->opts.nwhere++] = eq + 1;
		} else if (!diff && !strcmp(arg, "--reverse")) {
			a->opts.reverse = 1;
		} else if (!diff && !strcmp(arg, "--folded")) {
			a->folded = 1;
		} else if (!diff && ember__cli_is_opt(arg, "--min")) {
			if (!(v = ember__cli_opt_value(cmd, argc, argv, &i, "--min")) ||
			    parse_pct(cmd, "--min", v, &a->opts.min_pct) < 0)
				return EMBER_EXIT_USAGE;
		} else if (diff && ember__cli_is_opt(arg, "--fail-above")) {
			if (!(v = ember__cli_opt_value(cmd, argc, argv, &i, "--fail-above")) ||
			    parse_pct(cmd, "--fail-above", v, &a->fail_above) < 0)
				return EMBER_EXIT_USAGE;
		} else if (diff && (ember__cli_is_opt(arg, "--n") || ember__cli_is_opt(arg, "-n"))) {
			if (!(v = ember__cli_opt_value(cmd, argc, argv, &i, "--n")))
				return EMBER_EXIT_USAGE;
			if (ember__cli_parse_count(v, 1, 1000000, &a->rows) < 0) {
				ember__cli_error("diff: --n \"%s\" is invalid: expected 1..1000000", v);
				return EMBER_EXIT_USAGE;
			}
		} else {
			ember__cli_error("%s: unknown option '%s'", cmd, arg);
			usage(stderr);
			return EMBER_EXIT_USAGE;
		}
	}
	if (!diff && a->nfiles[0] == 0) {
		ember__cli_error("flame: no profile files given");
		usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	if (diff && (a->nfiles[0] == 0 || a->nfiles[1] == 0)) {
		ember__cli_error("diff: give both --base FILE... and --new FILE...");
		usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	return -1;
}

static int init_args(args *a, int argc)
{
	memset(a, 0, sizeof(*a));
	a->fail_above = -1;
	a->rows = DIFF_ROWS;
	a->files[0] = calloc((size_t)argc, sizeof(char *));
	a->files[1] = calloc((size_t)argc, sizeof(char *));
	if (!a->files[0] || !a->files[1]) {
		ember__cli_error("out of memory");
		return -1;
	}
	return 0;
}

static void free_args(args *a)
{
	free(a->files[0]);
	free(a->files[1]);
	for (size_t i = 0; i < a->opts.nwhere; i++)
		free((char *)a->opts.where_key[i]);
}

int ember__cli_flame(int argc, char **argv)
{
	args a;
	if (init_args(&a, argc) < 0) {
		free_args(&a);
		return EMBER_EXIT_INTERNAL;
	}
	int code = parse(argc, argv, &a, 0);
	ember__flame *fl = NULL;
	if (code >= 0)
		goto out;
	if (!a.out)
		a.out = a.folded ? "-" : "flame.html";
	if (add_files(&fl, &a.opts, a.files[0], a.nfiles[0], 0, NULL, 0) < 0 ||
	    check_nonempty(fl, 0, "input") < 0) {
		ember__cli_error("%s", ember_last_error());
		code = EMBER_EXIT_USAGE;
		goto out;
	}
	code = write_output(fl, NULL, a.out, a.folded);
	if (code == 0 && !a.folded && strcmp(a.out, "-"))
		fprintf(stderr, "emberprof: wrote %s (%u call-tree nodes from %zu file%s)\n", a.out,
			fl->nnodes, a.nfiles[0], a.nfiles[0] == 1 ? "" : "s");
out:
	ember__flame_free(fl);
	free_args(&a);
	return code;
}

int ember__cli_diff(int argc, char **argv)
{
	args a;
	if (init_args(&a, argc) < 0) {
		free_args(&a);
		return EMBER_EXIT_INTERNAL;
	}
	int code = parse(argc, argv, &a, 1);
	ember__flame *fl = NULL;
	ember__flame_diff d = { 0 };
	char type[256];
	if (code >= 0)
		goto out;
	if (!a.out)
		a.out = "diff.html";
	if (!a.opts.title)
		a.opts.title = "emberprof diff";
	a.opts.diff = 1;
	if (add_files(&fl, &a.opts, a.files[1], a.nfiles[1], 1, type, sizeof(type)) < 0 ||
	    add_files(&fl, &a.opts, a.files[0], a.nfiles[0], 0, type, sizeof(type)) < 0 ||
	    check_nonempty(fl, 1, "base") < 0 || check_nonempty(fl, 0, "new") < 0) {
		ember__cli_error("diff: %s", ember_last_error());
		code = EMBER_EXIT_USAGE;
		goto out;
	}
	if (ember__flame_diff_compute(fl, &d) < 0) {
		ember__cli_error("%s", ember_last_error());
		code = EMBER_EXIT_INTERNAL;
		goto out;
	}
	if ((code = write_output(fl, &d, a.out, 0)) != 0)
		goto out;
	if (ember__flame_diff_print(fl, &d, a.rows, stdout) < 0 || fflush(stdout) != 0) {
		ember__cli_error("cannot write the table");
		code = 1;
		goto out;
	}
	if (strcmp(a.out, "-"))
		fprintf(stderr, "emberprof: wrote %s\n", a.out);
	double worst = ember__flame_diff_worst(&d);
	if (a.fail_above >= 0 && worst > a.fail_above) {
		ember__cli_error("diff: a function's self share changed significantly by %.2f "
				 "points, more than --fail-above %g",
				 worst, a.fail_above);
		code = EXIT_FAIL_ABOVE;
	}
out:
	ember__flame_diff_free(&d);
	ember__flame_free(fl);
	free_args(&a);
	return code;
}

/* Writes dir/name of the files having sample type `type`; prints its path. */
static void run_page(const char *dir, char *const *paths, size_t n, const char *type,
		     const char *name, const char *title)
{
	ember__flame_opts o = { .type = type, .title = title };
	ember__flame *fl = ember__flame_new(&o);
	if (!fl) {
		ember__cli_error("out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		ember__profile *p = NULL;
		if (ember__cli_read_profile_named(paths[i], &p) < 0) {
			ember__profile_free(p);
			continue; /* the table has reported it */
		}
		int has = 0;
		for (uint32_t k = 0; k < p->nvalues; k++)
			has |= p->sample_type[k].type && !strcmp(p->sample_type[k].type, type);
		if (has && p->nsamples > 0 && ember__flame_add(fl, p, paths[i], 0) < 0)
			ember__cli_error("%s: %s", name, ember_last_error());
		ember__profile_free(p);
	}
	if (fl->nsamples > 0) {
		size_t len = strlen(dir) + strlen(name) + 2;
		char *out = malloc(len);
		if (out) {
			snprintf(out, len, "%s/%s", dir, name);
			if (write_output(fl, NULL, out, 0) == 0)
				fprintf(stderr, "emberprof: flame graph: %s\n", out);
			free(out);
		}
	}
	ember__flame_free(fl);
}

void ember__cli_run_flames(const char *dir, char *const *paths, size_t n)
{
	fputc('\n', stderr);
	/* the page adds the program's name (mapping 1's) to the title */
	run_page(dir, paths, n, "cpu", "flame.html", "CPU");
	run_page(dir, paths, n, "wall", "wall.html", "wall clock");
	run_page(dir, paths, n, "alloc_space", "alloc.html", "allocations");
}
