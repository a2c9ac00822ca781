/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run.c - `emberprof run [options] -- CMD [ARGS...]`.
 *
 * The command turns its options into EMBERPROF_* environment variables,
 * puts libemberprof.so (libemberprof_noalloc.so, without malloc & co,
 * unless allocation profiling needs emberprof's malloc) at the front of
 * LD_PRELOAD and runs CMD, whose
 * preloaded agent (src/preload/preload.c) then writes one pprof file per
 * window into the output directory. Afterwards it prints the top functions
 * of the profiles this run wrote, on stderr, and exits with CMD's status.
 *
 * Everything is validated before CMD starts, by the library's own parser:
 * the variables are set in emberprof's environment and a throw-away
 * builder applies them (ember_builder_apply_env), so a bad option or a bad
 * inherited EMBERPROF_* variable is reported - naming the option or the
 * variable - with exit code 2 and CMD never runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"   /* the builder, to learn what EMBERPROF_* asks */
#include "agent/options.h" /* the variables, their options and help */
#include "util/parse.h"
#include "cli.h"
#include "emberprof.h"
#include "preload/preload_env.h"
#include "report/local.h"
#include "util/error.h"
#include "util/redact.h"

extern char **environ;

#define DEFAULT_TOP 20

/*
 * The options: those setting a variable are the rows of the table of
 * variables with an `opt` (src/agent/options.c), in its order; these are
 * run's own. An option's id is its row's index in the table, or
 * ember__noptions + its index here.
 */
typedef struct cli_option {
	const char *name;  /* long name without "--" */
	char short_name;   /* 0 if none */
	int has_value;     /* 0 no, 1 yes */
	const char *arg;   /* the value, as the usage shows it */
	const char *help;
} cli_option;

enum {
	CLI_TOP,
	CLI_QUIET,
	CLI_FLAME,
	CLI_NO_FOLLOW,
	CLI_NO_KERNEL,
	CLI_NO_SYMBOLIZE,
	CLI_DEBUGINFOD,
	CLI_HELP
};
static const cli_option cli_options[] = {
	[CLI_TOP] = {"top", 'n', 1, "N", "rows in the summary table (20)"},
	[CLI_QUIET] = {"quiet", 'q', 0, NULL, "no summary table"},
	[CLI_FLAME] = {"flame", 0, 0, NULL, "at exit, also write flame.html (wall.html, alloc.html "
		       "for those profiles) into the output directory"},
	/* sets EMBERPROF_FOLLOW_CHILDREN=0 */
	[CLI_NO_FOLLOW] = {"no-follow-children", 0, 0, NULL, "only the process CMD starts as (and "
			   "what it execs in place) [EMBERPROF_FOLLOW_CHILDREN=0]"},
	/* sets EMBERPROF_KERNEL=0 */
	[CLI_NO_KERNEL] = {"no-kernel", 0, 0, NULL, "no kernel frames [EMBERPROF_KERNEL=0]"},
	/* sets EMBERPROF_SYMBOLIZE=0 */
	[CLI_NO_SYMBOLIZE] = {"no-symbolize", 0, 0, NULL, "profiles keep addresses, mappings and "
			      "build ids only: no symbol table or debug info read in the program; "
			      "`emberprof symbolize` names them later [EMBERPROF_SYMBOLIZE=0]"},
	/* sets DEBUGINFOD_URLS for emberprof's own pass (docs/design/debuginfod.md) */
	[CLI_DEBUGINFOD] = {"debuginfod", 0, 1, "URLS", "when the program has exited, name the "
			    "frames its files lack from debug files fetched by build id from these "
			    "servers, for at most EMBERPROF_DEBUGINFOD_TIMEOUT seconds (30) "
			    "[DEBUGINFOD_URLS]"},
	[CLI_HELP] = {"help", 'h', 0, NULL, "this help"},
};
#define NCLI (sizeof(cli_options) / sizeof(cli_options[0]))
#define CLI_ID(i) ((int)ember__noptions + (i))

typedef struct ember__cli_opts {
	const char *name;          /* the command, in messages: "run", "attach" */
	void (*usage)(FILE *out);  /* its help */
	const char **value; /* per row of the table: as given; NULL if not given */
	char *tags;         /* --tag values joined with ',' */
	char *headers;      /* --header values joined with '\n' */
	unsigned long top;
	int quiet;
	int flame;          /* --flame: write flame graph pages at exit */
	int cmd;            /* index of CMD in argv */
} run_opts;

/* Whether option `id` sets the variable `name`. */
static int sets(int id, const char *name)
{
	return id >= 0 && (size_t)id < ember__noptions && !strcmp(ember__options[id].name, name);
}

/* The option's long name. */
static const char *option_name(int id)
{
	return (size_t)id < ember__noptions ? ember__options[id].opt
					    : cli_options[id - CLI_ID(0)].name;
}

/* ---- usage ---- */

#define HELP_COL 27
#define HELP_WIDTH 80

/* Prints `text` from column *col on, wrapped at HELP_WIDTH into HELP_COL. */
static void print_wrapped(FILE *out, const char *text, int *col)
{
	while (*text) {
		size_t n = strcspn(text, " ");
		if (*col > HELP_COL && *col + 1 + (int)n > HELP_WIDTH) {
			fprintf(out, "\n%*s", HELP_COL, "");
			*col = HELP_COL;
		} else if (*col > HELP_COL) {
			fputc(' ', out);
			(*col)++;
		}
		fprintf(out, "%.*s", (int)n, text);
		*col += (int)n;
		text += n;
		while (*text == ' ')
			text++;
	}
}

/* "  -r, --rate HZ   help (default) [VARIABLE]" */
static void print_option(FILE *out, char short_name, const char *name, const char *arg,
			 int optional, const char *help, const char *deflt, const char *var)
{
	char left[96];
	int n = snprintf(left, sizeof(left), "  %c%c%c --%s%s%s%s%s", short_name ? '-' : ' ',
			 short_name ? short_name : ' ', short_name ? ',' : ' ', name,
			 arg && optional ? "[=" : arg ? " " : "", arg ? arg : "",
			 arg && optional ? "]" : "", "");
	fputs(left, out);
	int col = n;
	if (col > HELP_COL - 2) {
		fprintf(out, "\n%*s", HELP_COL, "");
		col = HELP_COL;
	} else {
		fprintf(out, "%*s", HELP_COL - col, "");
		col = HELP_COL;
	}
	char more[160] = "";
	if (deflt && var)
		snprintf(more, sizeof(more), "(%s) [%s]", deflt, var);
	else if (var)
		snprintf(more, sizeof(more), "[%s]", var);
	print_wrapped(out, help ? help : "", &col);
	print_wrapped(out, more, &col);
	fputc('\n', out);
}

void ember__cli_run_usage(FILE *out)
{
	fprintf(out,
		"usage: emberprof run [options] [--] CMD [ARGS...]\n"
		"\n"
		"Runs CMD with the emberprof agent preloaded, writes one gzip'd pprof file per\n"
		"reporting window into the output directory and, when CMD exits, prints the\n"
		"functions using the most CPU (on stderr). Exits with CMD's exit status\n"
		"(128+N if a signal N killed it).\n"
		"\n"
		"Options (each sets the EMBERPROF_* variable in brackets; see docs/CONFIG.md):\n");
	for (size_t i = 0; i < ember__noptions; i++) {
		const ember__option *r = &ember__options[i];
		if (r->opt)
			print_option(out, r->opt_short, r->opt, r->opt_arg ? r->values : NULL,
				     r->opt_arg == 2, r->help, r->deflt, r->name);
	}
	for (size_t i = 0; i < NCLI; i++)
		print_option(out, cli_options[i].short_name, cli_options[i].name,
			     cli_options[i].arg, 0, cli_options[i].help, NULL, NULL);
	fprintf(out, "\nOther variables (see docs/CONFIG.md):\n ");
	int col = 1;
	for (size_t i = 0; i < ember__noptions; i++) {
		const ember__option *r = &ember__options[i];
		if (r->opt || (r->flags & (EMBER__OPTF_TEST | EMBER__OPTF_INTERNAL |
					   EMBER__OPTF_FOREIGN)))
			continue;
		size_t n = strlen(r->name);
		if (col + 1 + (int)n > HELP_WIDTH) {
			fputs("\n ", out);
			col = 1;
		}
		fprintf(out, " %s", r->name);
		col += 1 + (int)n;
	}
	fprintf(out,
		"\n\n"
		"Options override the same EMBERPROF_* variables inherited from the environment.\n"
		"EMBERPROF_LIB overrides which library is preloaded (libemberprof.so with\n"
		"--alloc, else libemberprof_noalloc.so).\n"
		"Exit codes of emberprof itself: 2 bad usage or configuration, 125 internal\n"
		"failure, 126 CMD cannot be profiled or executed, 127 CMD not found.\n");
}

/* ---- options ---- */

static int find_option(const char *arg, const char **inline_value)
{
	*inline_value = NULL;
	if (arg[1] == '-') {
		const char *name = arg + 2;
		size_t n = strcspn(name, "=");
		for (int id = 0; id < CLI_ID((int)NCLI); id++) {
			const char *o = option_name(id);
			if (o && strlen(o) == n && !strncmp(o, name, n)) {
				if (name[n] == '=')
					*inline_value = name + n + 1;
				return id;
			}
		}
		return -1;
	}
	for (size_t i = 0; i < ember__noptions; i++)
		if (ember__options[i].opt_short && arg[1] == ember__options[i].opt_short && !arg[2])
			return (int)i;
	for (size_t i = 0; i < NCLI; i++)
		if (cli_options[i].short_name && arg[1] == cli_options[i].short_name && !arg[2])
			return CLI_ID((int)i);
	return -1;
}

/* The option's kind of value: 0 none, 1 required, 2 optional. */
static int option_has_value(int id)
{
	return (size_t)id < ember__noptions ? ember__options[id].opt_arg
					    : cli_options[id - CLI_ID(0)].has_value;
}

/* Appends one --tag KEY=VALUE to o->tags. Returns 0 or prints and fails. */
static int add_tag(run_opts *o, const char *tag)
{
	const char *eq = strchr(tag, '=');
	if (!eq || eq == tag) {
		ember__cli_error("%s: --tag \"%s\" is invalid: expected KEY=VALUE", o->name, tag);
		return -1;
	}
	if (strchr(tag, ',')) {
		ember__cli_error("%s: --tag \"%s\" is invalid: a tag may not contain ','", o->name, tag);
		return -1;
	}
	size_t old = o->tags ? strlen(o->tags) : 0, n = strlen(tag);
	char *s = realloc(o->tags, old + n + 2);
	if (!s) {
		ember__cli_error("out of memory");
		return -1;
	}
	if (old)
		s[old++] = ',';
	memcpy(s + old, tag, n + 1);
	o->tags = s;
	return 0;
}

/* Appends one --header NAME: VALUE to o->headers. Returns 0 or prints and fails. */
static int add_header(run_opts *o, const char *h)
{
	const char *colon = strchr(h, ':');
	if (!colon || colon == h || strpbrk(h, "\r\n")) {
		char shown[160];
		ember__cli_error("%s: --header \"%s\" is invalid: expected 'NAME: VALUE' on one line", o->name,
				 ember__redact_header(h, shown, sizeof(shown)));
		return -1;
	}
	size_t old = o->headers ? strlen(o->headers) : 0, n = strlen(h);
	char *s = realloc(o->headers, old + n + 2);
	if (!s) {
		ember__cli_error("out of memory");
		return -1;
	}
	if (old)
		s[old++] = '\n';
	memcpy(s + old, h, n + 1);
	o->headers = s;
	return 0;
}

/* The table's row of `name` (a row run relies on: never NULL). */
static size_t row(const char *name)
{
	const ember__option *r = ember__opt_find(name);
	return r ? (size_t)(r - ember__options) : 0;
}

/* Handles one of run's own options. 0, or 1 to stop. */
static int apply_cli_option(run_opts *o, int which, const char *value)
{
	switch (which) {
	case CLI_TOP:
		if (ember__cli_parse_count(value, 1, 1000000, &o->top) < 0) {
			ember__cli_error("%s: --top \"%s\" is invalid: expected a number of rows, "
					 "1..1000000", o->name,
					 value);
			return -1;
		}
		return 0;
	case CLI_QUIET:
		o->quiet = 1;
		return 0;
	case CLI_FLAME:
		o->flame = 1;
		return 0;
	case CLI_NO_FOLLOW:
	case CLI_NO_KERNEL:
		o->value[row(which == CLI_NO_FOLLOW ? "EMBERPROF_FOLLOW_CHILDREN" : "EMBERPROF_KERNEL")] = "0";
		return 0;
	case CLI_NO_SYMBOLIZE:
		o->value[row("EMBERPROF_SYMBOLIZE")] = "0";
		return 0;
	case CLI_DEBUGINFOD:
		if (setenv("DEBUGINFOD_URLS", value, 1) != 0) {
			ember__cli_error("out of memory");
			return -1;
		}
		return 0;
	default: /* CLI_HELP */
		o->usage(stdout);
		return 1;
	}
}

/* Handles one option with its value (NULL for a flag). 0, or 1 to stop. */
static int apply_option(run_opts *o, int id, const char *value)
{
	if ((size_t)id >= ember__noptions)
		return apply_cli_option(o, id - CLI_ID(0), value);
	const ember__option *r = &ember__options[id];
	if (sets(id, "EMBERPROF_TAGS"))
		return add_tag(o, value);
	if (sets(id, "EMBERPROF_SERVER_HEADERS"))
		return add_header(o, value);
	if (sets(id, "EMBERPROF_SERVER_BASIC_AUTH_USER")) {
		const char *colon = strchr(value, ':');
		if (!colon || colon == value || !colon[1]) {
			ember__cli_error("%s: --basic-auth is invalid: expected USER:PASSWORD", o->name);
			return -1;
		}
	}
	if ((sets(id, "EMBERPROF_OUTPUT_DIR") || sets(id, "EMBERPROF_APP_NAME")) && !*value) {
		ember__cli_error("%s: --%s needs a non-empty value", o->name, r->opt);
		return -1;
	}
	/* a flag turns its boolean on; --wall, --alloc alone: "on" */
	o->value[id] = value ? value : r->opt_arg == 2 ? "on" : "1";
	return 0;
}

/*
 * Parses the options of argv (argv[0] is the command). Returns -1 to go
 * on (o filled, o->cmd the first argument that is not an option, or argc),
 * else the exit code to return right away.
 */
static int parse_options(int argc, char **argv, run_opts *o)
{
	int i = 1;
	for (; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "--")) {
			i++;
			break;
		}
		if (arg[0] != '-' || arg[1] == '\0')
			break; /* CMD */
		const char *value;
		int id = find_option(arg, &value);
		if (id < 0) {
			ember__cli_error("%s: unknown option '%s'", o->name, arg);
			o->usage(stderr);
			return EMBER_EXIT_USAGE;
		}
		int has_value = option_has_value(id);
		unsigned wall_ms;
		/* --wall 20ms; --alloc takes its value only as --alloc=BYTES */
		if (sets(id, "EMBERPROF_WALL") && !value && i + 1 < argc &&
		    ember__parse_wall(argv[i + 1], &wall_ms) == 0)
			value = argv[++i]; /* --wall 20ms */
		if (has_value == 1 && !value) {
			if (i + 1 >= argc || !strcmp(argv[i + 1], "--")) {
				ember__cli_error("%s: option --%s needs a value", o->name, option_name(id));
				return EMBER_EXIT_USAGE;
			}
			value = argv[++i];
		} else if (!has_value && value) {
			ember__cli_error("%s: option --%s takes no value", o->name, option_name(id));
			return EMBER_EXIT_USAGE;
		}
		int rc = apply_option(o, id, value);
		if (rc)
			return rc > 0 ? 0 : EMBER_EXIT_USAGE;
	}
	o->cmd = i;
	return -1;
}

/* run's: the options, then CMD. */
static int parse_args(int argc, char **argv, run_opts *o)
{
	int rc = parse_options(argc, argv, o);
	if (rc >= 0)
		return rc;
	if (o->cmd >= argc) {
		ember__cli_error("%s: no command given", o->name);
		o->usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	return -1;
}

/* ---- environment ---- */

static int set_var(const char *name, const char *value)
{
	if (setenv(name, value, 1) == 0)
		return 0;
	ember__cli_error("cannot set %s: %s", name, strerror(errno));
	return -1;
}

/* The value an option gives its variable (joined lists for repeatable ones). */
static const char *option_value(const run_opts *o, int id)
{
	if (sets(id, "EMBERPROF_TAGS"))
		return o->tags;
	if (sets(id, "EMBERPROF_SERVER_HEADERS"))
		return o->headers;
	return o->value[id];
}

/* --basic-auth USER:PASSWORD becomes two variables. */
static int export_basic_auth(const char *v)
{
	const char *colon = strchr(v, ':');
	char *user = strndup(v, (size_t)(colon - v));
	if (!user) {
		ember__cli_error("out of memory");
		return -1;
	}
	int rc = set_var("EMBERPROF_SERVER_BASIC_AUTH_USER", user);
	free(user);
	return rc ? rc : set_var("EMBERPROF_SERVER_BASIC_AUTH_PASSWORD", colon + 1);
}

/* Whether a Pyroscope server URL is set (by --server or inherited). */
static int server_configured(void)
{
	const char *a = getenv("EMBERPROF_SERVER_URL"), *b = getenv("PYROSCOPE_SERVER_ADDRESS");
	return (a && *a) || (b && *b);
}

/* Sets the variables of the given options (output dir made absolute). */
static int export_options(const run_opts *o, const char *cmd)
{
	for (int id = 0; id < (int)ember__noptions; id++) {
		const char *v = option_value(o, id), *name = ember__options[id].name;
		if (!v)
			continue;
		if (sets(id, "EMBERPROF_SERVER_BASIC_AUTH_USER")) {
			if (export_basic_auth(v))
				return -1;
		} else if (sets(id, "EMBERPROF_OUTPUT_DIR") ||
			   (sets(id, "EMBERPROF_UNWIND_CACHE") && v[0] != '/' &&
			    strcmp(v, "off") != 0 && strcmp(v, "on") != 0)) {
			char *abs = ember__cli_absolute(v);
			if (!abs) {
				ember__cli_error("%s", ember_last_error());
				return -1;
			}
			int rc = set_var(name, abs);
			free(abs);
			if (rc)
				return rc;
		} else if (set_var(name, v)) {
			return -1;
		}
	}
	/* An inherited relative output directory: pin it before CMD can chdir. */
	const char *dir = getenv(EMBER_ENV_OUTPUT_DIR);
	if (!o->value[row(EMBER_ENV_OUTPUT_DIR)] && dir && *dir && dir[0] != '/') {
		char *abs = ember__cli_absolute(dir);
		if (!abs || set_var(EMBER_ENV_OUTPUT_DIR, abs)) {
			if (!abs)
				ember__cli_error("%s", ember_last_error());
			free(abs);
			return -1;
		}
		free(abs);
	}
	/* The default application name is the command's, not the interpreter's
	 * (unless PYROSCOPE_APPLICATION_NAME names it for a Pyroscope server). */
	const char *app = getenv(EMBER_ENV_APP_NAME);
	const char *papp = getenv("PYROSCOPE_APPLICATION_NAME");
	if ((!app || !*app) && !(server_configured() && papp && *papp)) {
		const char *base = strrchr(cmd, '/');
		base = base ? base + 1 : cmd;
		if (set_var(EMBER_ENV_APP_NAME, *base ? base : "app"))
			return -1;
	}
	return 0;
}

/* Prints a validation failure, naming the option if one set the variable. */
static void report_invalid(const run_opts *o, const char *msg)
{
	for (int id = 0; id < (int)ember__noptions; id++) {
		const char *v = option_value(o, id);
		char needle[64];
		snprintf(needle, sizeof(needle), "%s=", ember__options[id].name);
		if (v && (strstr(msg, needle) ||
			  (sets(id, "EMBERPROF_SERVER_BASIC_AUTH_USER") &&
			   strstr(msg, "EMBERPROF_SERVER_BASIC_AUTH_PASSWORD=")))) {
			ember__cli_error("%s: invalid --%s: %s", o->name, ember__options[id].opt, msg);
			return;
		}
	}
	ember__cli_error("%s: %s", o->name, msg);
}

/*
 * Applies the whole environment to a throw-away builder. 0 or exit code.
 * *alloc_hook: whether the program needs emberprof's malloc (allocation
 * profiling on, with a backend that may be emberprof's own).
 */
static int validate_environment(const run_opts *o, int *alloc_hook)
{
	ember_builder *b = NULL;
	const char *autostart;
	ember__opt_value flag;
	if (ember__opt_read(ember__opt_find(EMBER_ENV_AUTOSTART), &autostart, &flag) < 0) {
		ember__cli_error("%s: %s", o->name, ember_last_error());
		return EMBER_EXIT_USAGE;
	}
	if (ember_builder_new(&b, "emberprof") < 0) {
		ember__cli_error("%s", ember_last_error());
		return EMBER_EXIT_INTERNAL;
	}
	int rc = ember_builder_apply_env(b);
	if (rc < 0) {
		char msg[EMBER_ERROR_MAX];
		snprintf(msg, sizeof(msg), "%s", ember_last_error());
		report_invalid(o, msg);
	}
	*alloc_hook = b->cfg.alloc_mean != 0 && b->cfg.alloc_backend != EMBER_ALLOC_BACKEND_JEMALLOC;
	ember_builder_free(b);
	if (rc == EMBER_ERR_NOMEM)
		return EMBER_EXIT_INTERNAL;
	return rc < 0 ? EMBER_EXIT_USAGE : 0;
}

/* Warns about EMBERPROF_* variables nothing reads (likely misspelled). */
static void warn_unknown_variables(void)
{
	static const char prefix[] = "EMBERPROF_";
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, prefix, sizeof(prefix) - 1))
			continue;
		size_t n = strcspn(*e, "=");
		int known = 0;
		for (size_t i = 0; i < ember__noptions; i++)
			if (strlen(ember__options[i].name) == n && !strncmp(ember__options[i].name, *e, n))
				known = 1;
		if (!known)
			ember__cli_error("warning: ignoring unknown environment variable %.*s", (int)n,
					 *e);
	}
}

static int export_ld_preload(const char *lib)
{
	char *v = ember__cli_ld_preload_with(getenv("LD_PRELOAD"), lib);
	if (!v) {
		ember__cli_error("out of memory");
		return -1;
	}
	int rc = set_var("LD_PRELOAD", v);
	free(v);
	return rc;
}

/*
 * Where the profiles go: *dir, malloc'd, the given directory or a fresh
 * default one named after cmd (EMBERPROF_OUTPUT_DIR set to it); NULL when
 * profiles go to a Pyroscope server and no directory was asked for. 0, or
 * the exit code (the error printed).
 */
static int output_dir(const char *cmd, char **dir)
{
	*dir = NULL;
	const char *given = getenv(EMBER_ENV_OUTPUT_DIR);
	if (!(given && *given) && server_configured())
		return 0;
	if (given && *given) {
		if (!(*dir = strdup(given))) {
			ember__cli_error("out of memory");
			return EMBER_EXIT_INTERNAL;
		}
		return 0;
	}
	if (ember__cli_make_default_outdir(cmd, dir) < 0) {
		ember__cli_error("%s", ember_last_error());
		return EMBER_EXIT_USAGE;
	}
	return set_var(EMBER_ENV_OUTPUT_DIR, *dir) < 0 ? EMBER_EXIT_INTERNAL : 0;
}

/* Whether the run profiles the whole tree (EMBERPROF_FOLLOW_CHILDREN). */
static int following(void)
{
	const char *v = getenv(EMBER_ENV_FOLLOW_CHILDREN);
	int flag = 1;
	if (v && ember__parse_bool(v, &flag) < 0)
		flag = 1;
	return flag;
}

/* How the run starts the program: the tree engine (ct and its watcher)
 * or the preloaded library (lib, found with alloc_hook); chosen: the tree
 * engine was picked by default, and may give way to the library. */
typedef struct run_engine {
	ember__cli_tree *ct;
	ember__cli_watch watch;
	int chosen;
	int alloc_hook;
	char *lib;
} run_engine;

/* --log-level info or debug */
static int log_verbose(void)
{
	const char *lvl = getenv("EMBERPROF_LOG_LEVEL");
	return lvl && (strcmp(lvl, "debug") == 0 || strcmp(lvl, "info") == 0);
}

/* The tree engine, configured from the environment as exported: 0 or
 * the exit code (the error printed). */
static int start_tree(ember__cli_tree **ct, ember__cli_watch *watch)
{
	int rc = ember__cli_tree_new(ct, log_verbose(), following());
	if (rc < 0) {
		ember__cli_error("run: %s", ember_last_error());
		return rc == EMBER_ERR_INVALID ? EMBER_EXIT_USAGE : EMBER_EXIT_INTERNAL;
	}
	ember__cli_tree_watch(*ct, watch);
	return 0;
}

/*
 * The tree engine, chosen by default, could not attach to the program
 * (perf events refused after the probe passed: the perf locked-memory
 * allowance used up by other sessions, for one). Its child was killed
 * before it exec'd, so the program has not run: it runs again with the
 * library preloaded, as where the probe fails. Says so, frees the tree
 * engine; 0, or the exit code (the error printed).
 */
static int fall_back_to_library(run_engine *e)
{
	fprintf(stderr,
		"emberprof: note: the tree engine could not start (%s): the preloaded library "
		"profiles the program instead\n",
		ember__cli_tree_attach_error(e->ct));
	ember__cli_tree_free(e->ct);
	e->ct = NULL;
	int code = ember__cli_find_library(e->alloc_hook, &e->lib);
	if (code != 0) {
		ember__cli_error("%s", ember_last_error());
		return code;
	}
	return export_ld_preload(e->lib) < 0 ? EMBER_EXIT_INTERNAL : 0;
}

/*
 * Starts CMD with the run's engine and waits for it: 0, or nonzero with
 * the error printed and *status the exit code. A tree engine chosen by
 * default that cannot attach gives way to the library, and the program,
 * killed before it exec'd, starts again.
 */
static int spawn_program(run_engine *e, const char *path, char **cmd_argv, int *status,
			 int *killed_by)
{
	fflush(NULL);
	int rc = ember__cli_spawn_watch(path, cmd_argv, status, killed_by,
					e->ct ? &e->watch : NULL);
	if (rc && e->chosen && ember__cli_tree_attach_error(e->ct)) {
		if ((*status = fall_back_to_library(e)) != 0)
			return *status;
		fflush(NULL);
		rc = ember__cli_spawn_watch(path, cmd_argv, status, killed_by, NULL);
	}
	if (rc)
		ember__cli_error("%s", ember_last_error());
	return rc;
}

/* Readies the engine: the library in LD_PRELOAD (e->lib), or the tree
 * engine (tree). 0, or the exit code (the error printed). */
static int start_engine(run_engine *e, int tree)
{
	if (tree)
		return start_tree(&e->ct, &e->watch);
	return export_ld_preload(e->lib) < 0 ? EMBER_EXIT_INTERNAL : 0;
}

/* Runs CMD with the run's engine and summarizes; returns the exit code. */
static int run_and_summarize(const run_opts *o, run_engine *e, const char *path,
			     char **cmd_argv, const char *dir)
{
	ember__cli_names before = { 0 }, jfr_before = { 0 };
	if (ember__cli_list_profiles(dir, &before) < 0 ||
	    ember__cli_list_files(dir, EMBER_LOCAL_JFR_SUFFIX, &jfr_before) < 0) {
		ember__cli_error("%s", ember_last_error());
		ember__cli_names_free(&before);
		return EMBER_EXIT_INTERNAL;
	}
	int status, killed_by;
	if (spawn_program(e, path, cmd_argv, &status, &killed_by) != 0) {
		ember__cli_names_free(&before);
		ember__cli_names_free(&jfr_before);
		return status;
	}
	/* debuginfod, here in our own process once the program has exited
	 * (docs/design/debuginfod.md); not for files written addresses-only */
	const char *symbolize = getenv("EMBERPROF_SYMBOLIZE");
	if (!(symbolize && !strcmp(symbolize, "0")))
		(void)ember__cli_symbolize_new_files(dir, &before, &jfr_before,
						     getenv("EMBERPROF_LINES"), o->quiet);
	if (killed_by)
		ember__cli_error("%s was killed by signal %d (%s)", cmd_argv[0], killed_by,
				 strsignal(killed_by));
	ember__cli_summary sum = {
		.dir = dir,
		.cmd = cmd_argv[0],
		.top = o->top,
		.quiet = o->quiet,
		.flame = o->flame,
		.tree = e->ct != NULL,
		.follow = following(),
		.killed_by = killed_by,
	};
	ember__cli_summarize(&sum, &before, &jfr_before);
	ember__cli_names_free(&before);
	ember__cli_names_free(&jfr_before);
	return status;
}

int ember__cli_run(int argc, char **argv)
{
	run_opts o;
	memset(&o, 0, sizeof(o));
	o.top = DEFAULT_TOP;
	o.name = "run";
	o.usage = ember__cli_run_usage;
	char *path = NULL, *dir = NULL;
	run_engine e = { 0 };

	int code = EMBER_EXIT_INTERNAL;
	if (!(o.value = calloc(ember__noptions, sizeof(*o.value)))) {
		ember__cli_error("out of memory");
		goto out;
	}
	code = parse_args(argc, argv, &o);
	if (code >= 0)
		goto out;
	const char *cmd = argv[o.cmd];

	/* 1. Configuration, checked by the library itself. */
	code = EMBER_EXIT_USAGE;
	if (export_options(&o, cmd) < 0)
		goto out;
	/* --engine tree: the tree is sampled from outside (tools/tree/), the
	 * library is not loaded; the library's own engines do not know it.
	 * No --engine: the tree engine where it does all the library would
	 * (ember__cli_tree_default), else the library. */
	const char *engine = getenv("EMBERPROF_ENGINE");
	int tree = engine && strcmp(engine, "tree") == 0, choose = !engine || !*engine;
	if (tree || choose)
		unsetenv("EMBERPROF_ENGINE");
	if ((code = validate_environment(&o, &e.alloc_hook)) != 0)
		goto out;
	e.chosen = choose;
	if (choose) {
		char why[EMBER_ERROR_MAX + 64];
		tree = ember__cli_tree_default(why, sizeof(why));
		if (log_verbose())
			fprintf(stderr, "emberprof: engine: %s\n", why);
	}
	warn_unknown_variables();
	/* the library's own mark (a run nested in a --no-follow-children one) */
	unsetenv(EMBER_ENV_PROFILE_PID);
	/* our child starts its agent at once, the rest of the tree lazily */
	char run_pid[24];
	snprintf(run_pid, sizeof(run_pid), "%ld", (long)getpid());
	if (set_var(EMBER_ENV_RUN_PID, run_pid) < 0) {
		code = EMBER_EXIT_INTERNAL;
		goto out;
	}

	/* 2. The program and the library (not loaded by --engine tree). */
	if ((code = ember__cli_find_program(cmd, &path)) != 0 ||
	    (!tree && (code = ember__cli_find_library(e.alloc_hook, &e.lib)) != 0)) {
		ember__cli_error("%s", ember_last_error());
		goto out;
	}

	/* 3. The output directory (a fresh default one if none was given),
	 * unless profiles go to a Pyroscope server and no directory was asked
	 * for: then the agent is started without a local reporter. */
	if ((code = output_dir(cmd, &dir)) != 0)
		goto out;
	if (!dir) {
		code = EMBER_EXIT_INTERNAL;
		if (set_var(EMBER_ENV_AUTOSTART, "1") < 0 || (code = start_engine(&e, tree)) != 0)
			goto out;
		int killed_by;
		if (spawn_program(&e, path, argv + o.cmd, &code, &killed_by) == 0 && killed_by)
			ember__cli_error("%s was killed by signal %d (%s)", argv[o.cmd], killed_by,
					 strsignal(killed_by));
		goto out;
	}
	if ((code = start_engine(&e, tree)) != 0)
		goto out;

	code = run_and_summarize(&o, &e, path, argv + o.cmd, dir);
out:
	ember__cli_tree_free(e.ct);
	free(dir);
	free(e.lib);
	free(path);
	free(o.tags);
	free(o.headers);
	free(o.value);
	return code;
}

/* ---- the options other commands share (`emberprof attach`) ---- */

int ember__cli_opts_parse(const char *name, void (*usage)(FILE *), int argc, char **argv,
			  ember__cli_opts **out, int *first)
{
	*out = NULL;
	run_opts *o = calloc(1, sizeof(*o));
	if (!o || !(o->value = calloc(ember__noptions, sizeof(*o->value)))) {
		free(o);
		ember__cli_error("out of memory");
		return EMBER_EXIT_INTERNAL;
	}
	o->top = DEFAULT_TOP;
	o->name = name;
	o->usage = usage;
	int rc = parse_options(argc, argv, o);
	if (rc >= 0) {
		ember__cli_opts_free(o);
		return rc;
	}
	*first = o->cmd;
	*out = o;
	return -1;
}

int ember__cli_opts_setup(ember__cli_opts *o, const char *app, char **dir, int *alloc_hook)
{
	*dir = NULL;
	if (export_options(o, app) < 0)
		return EMBER_EXIT_USAGE;
	int code = validate_environment(o, alloc_hook);
	if (code)
		return code;
	warn_unknown_variables();
	unsetenv(EMBER_ENV_PROFILE_PID);
	return output_dir(app, dir);
}

void ember__cli_opts_summary(const ember__cli_opts *o, ember__cli_summary *s)
{
	s->top = o->top;
	s->quiet = o->quiet;
	s->flame = o->flame;
	s->follow = following();
}

int ember__cli_opts_verbose(void)
{
	return log_verbose();
}

void ember__cli_opts_free(ember__cli_opts *o)
{
	if (!o)
		return;
	free(o->tags);
	free(o->headers);
	free(o->value);
	free(o);
}
