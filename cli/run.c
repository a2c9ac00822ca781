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

#include "agent/agent_internal.h" /* the builder, to learn what EMBERPROF_* asks */
#include "util/parse.h"
#include "cli.h"
#include "emberprof.h"
#include "preload/preload_env.h"
#include "report/local.h"
#include "util/error.h"
#include "util/redact.h"

extern char **environ;

#define DEFAULT_TOP 20

/* Options that become environment variables, in the order of the usage. */
enum {
	OPT_RATE,
	OPT_INTERVAL,
	OPT_OUTPUT,
	OPT_DEPTH,
	OPT_APP,
	OPT_TAG,
	OPT_THREAD_LABELS,
	OPT_FOLLOW,
	OPT_LOG_LEVEL,
	OPT_UNWIND,
	OPT_LINES,
	OPT_ENGINE,
	OPT_WALL,
	OPT_ALLOC,
	OPT_SIGNAL,
	OPT_SERVER,
	OPT_TENANT,
	OPT_AUTH_TOKEN,
	OPT_BASIC_AUTH,
	OPT_HEADER,
	OPT_FORMAT,
	/* the S3 reporter's */
	OPT_S3_BUCKET,
	OPT_S3_GROUP,
	OPT_S3_OWNER,
	OPT_S3_ENDPOINT,
	OPT_S3_REGION,
	OPT_BACKEND,
	OPT_UNWIND_CACHE,
	OPT_KERNEL,
	NENV_OPTS,
	/* CLI-only options */
	OPT_TOP = NENV_OPTS,
	OPT_QUIET,
	OPT_HELP,
	OPT_FLAME,
	OPT_NO_FOLLOW, /* sets EMBERPROF_FOLLOW_CHILDREN=0 through OPT_FOLLOW */
	OPT_NO_KERNEL, /* sets EMBERPROF_KERNEL=0 through OPT_KERNEL */
};

typedef struct option_def {
	const char *name;  /* long name without "--" */
	char short_name;   /* 0 if none */
	int has_value;     /* 0 no, 1 yes, 2 optional (--opt=V, or --opt V when V parses) */
	const char *env;   /* the variable it sets, NULL for CLI-only options */
} option_def;

static const option_def option_defs[] = {
	[OPT_RATE] = { "rate", 'r', 1, "EMBERPROF_SAMPLE_RATE" },
	[OPT_INTERVAL] = { "interval", 'i', 1, "EMBERPROF_INTERVAL" },
	[OPT_OUTPUT] = { "output", 'o', 1, "EMBERPROF_OUTPUT_DIR" },
	[OPT_DEPTH] = { "depth", 'd', 1, "EMBERPROF_MAX_DEPTH" },
	[OPT_APP] = { "app", 'a', 1, "EMBERPROF_APP_NAME" },
	[OPT_TAG] = { "tag", 't', 1, "EMBERPROF_TAGS" },
	[OPT_THREAD_LABELS] = { "thread-labels", 0, 0, "EMBERPROF_THREAD_LABELS" },
	[OPT_FOLLOW] = { "follow-children", 'f', 0, "EMBERPROF_FOLLOW_CHILDREN" },
	[OPT_LOG_LEVEL] = { "log-level", 0, 1, "EMBERPROF_LOG_LEVEL" },
	[OPT_UNWIND] = { "unwind", 0, 1, "EMBERPROF_UNWIND" },
	[OPT_LINES] = { "lines", 0, 1, "EMBERPROF_LINES" },
	[OPT_ENGINE] = { "engine", 0, 1, "EMBERPROF_ENGINE" },
	[OPT_WALL] = { "wall", 0, 2, "EMBERPROF_WALL" },
	[OPT_ALLOC] = { "alloc", 0, 2, "EMBERPROF_ALLOC" },
	[OPT_SIGNAL] = { "signal", 0, 1, "EMBERPROF_SIGNAL" },
	[OPT_SERVER] = { "server", 0, 1, "EMBERPROF_SERVER_URL" },
	[OPT_TENANT] = { "tenant", 0, 1, "EMBERPROF_SERVER_TENANT_ID" },
	[OPT_AUTH_TOKEN] = { "auth-token", 0, 1, "EMBERPROF_SERVER_AUTH_TOKEN" },
	/* sets EMBERPROF_SERVER_BASIC_AUTH_USER and _PASSWORD */
	[OPT_BASIC_AUTH] = { "basic-auth", 0, 1, "EMBERPROF_SERVER_BASIC_AUTH_USER" },
	[OPT_HEADER] = { "header", 0, 1, "EMBERPROF_SERVER_HEADERS" },
	[OPT_FORMAT] = { "format", 0, 1, "EMBERPROF_OUTPUT_FORMAT" },
	[OPT_S3_BUCKET] = { "s3-bucket", 0, 1, "EMBERPROF_S3_BUCKET" },
	[OPT_S3_GROUP] = { "s3-profiling-group", 0, 1, "EMBERPROF_S3_PROFILING_GROUP" },
	[OPT_S3_OWNER] = { "s3-bucket-owner", 0, 1, "EMBERPROF_S3_BUCKET_OWNER" },
	[OPT_S3_ENDPOINT] = { "s3-endpoint", 0, 1, "EMBERPROF_S3_ENDPOINT" },
	[OPT_S3_REGION] = { "s3-region", 0, 1, "EMBERPROF_S3_REGION" },
	[OPT_BACKEND] = { "backend", 0, 1, "EMBERPROF_BACKEND" },
	[OPT_UNWIND_CACHE] = { "unwind-cache", 0, 1, "EMBERPROF_UNWIND_CACHE" },
	[OPT_KERNEL] = { "kernel", 0, 0, "EMBERPROF_KERNEL" },
	[OPT_TOP] = { "top", 'n', 1, NULL },
	[OPT_QUIET] = { "quiet", 'q', 0, NULL },
	[OPT_HELP] = { "help", 'h', 0, NULL },
	[OPT_FLAME] = { "flame", 0, 0, NULL },
	[OPT_NO_FOLLOW] = { "no-follow-children", 0, 0, NULL },
	[OPT_NO_KERNEL] = { "no-kernel", 0, 0, NULL },
};
#define NOPTIONS (sizeof(option_defs) / sizeof(option_defs[0]))

/* Every variable emberprof reads; others with the prefix draw a warning. */
static const char *const known_vars[] = {
	"EMBERPROF_APP_NAME",	   "EMBERPROF_SAMPLE_RATE", "EMBERPROF_INTERVAL",
	"EMBERPROF_MAX_DEPTH",	   "EMBERPROF_UNWIND",	     "EMBERPROF_LINES",	     "EMBERPROF_ENGINE",
	"EMBERPROF_WALL",	   "EMBERPROF_ENGINE_PERF_DISABLE",
	"EMBERPROF_KERNEL", /* the tree engine's kernel frames (cli/run_tree.c) */
	"EMBERPROF_ALLOC",	   "EMBERPROF_ALLOC_SAMPLE_BYTES",
	"EMBERPROF_ALLOC_BACKEND", /* the jemalloc backend (src/heap/jemalloc.c) */
	"EMBERPROF_SIGNAL",	   "EMBERPROF_TAGS",	     "EMBERPROF_THREAD_LABELS",
	"EMBERPROF_LOG_LEVEL",	   "EMBERPROF_OUTPUT_DIR",  "EMBERPROF_FOLLOW_CHILDREN",
	"EMBERPROF_PROFILE_PID", /* set by the library under EMBERPROF_FOLLOW_CHILDREN=0 */
	"EMBERPROF_RUN_PID",     /* set by `emberprof run` for the library */
	"EMBERPROF_OUTPUT_FORMAT",
	"EMBERPROF_AUTOSTART",	   "EMBERPROF_LIB",
	"EMBERPROF_POLLCATCH_THRESHOLD", "EMBERPROF_WALL_SIGNAL_IDLE", /* read by the agent too */
	/* the Pyroscope reporter's (src/agent/env_pyroscope.c) */
	"EMBERPROF_SERVER_URL", "EMBERPROF_SERVER_PROTOCOL", "EMBERPROF_SERVER_AUTH_TOKEN",
	"EMBERPROF_SERVER_BASIC_AUTH_USER", "EMBERPROF_SERVER_BASIC_AUTH_PASSWORD",
	"EMBERPROF_SERVER_TENANT_ID", "EMBERPROF_SERVER_HEADERS", "EMBERPROF_SERVER_CA_FILE",
	"EMBERPROF_SERVER_INSECURE", "EMBERPROF_SERVER_CONNECT_TIMEOUT", "EMBERPROF_SERVER_TIMEOUT",
	"EMBERPROF_SERVER_SPOOL_DIR", "EMBERPROF_SERVER_SPOOL_MAX", "EMBERPROF_SERVER_QUEUE_LEN",
	"EMBERPROF_SERVER_UPLOAD_JITTER", "EMBERPROF_SERVER_FLUSH_TIMEOUT",
	"EMBERPROF_SERVER_USER_AGENT", "EMBERPROF_SERVER_MAX_AGE",
	/* the S3 reporter's (src/agent/env_s3.c) */
	"EMBERPROF_S3_BUCKET", "EMBERPROF_S3_PROFILING_GROUP", "EMBERPROF_S3_BUCKET_OWNER",
	"EMBERPROF_S3_ENDPOINT", "EMBERPROF_S3_REGION", "EMBERPROF_S3_AWS_PROFILE",
	"EMBERPROF_S3_SPOOL_DIR", "EMBERPROF_S3_HOST",
	/* the async-profiler backend's (src/asprof/asprof_config.c) */
	"EMBERPROF_BACKEND", "EMBERPROF_ASPROF_LIB", "EMBERPROF_ASPROF_CPU_INTERVAL",
	"EMBERPROF_ASPROF_WALL_INTERVAL", "EMBERPROF_ASPROF_NATIVEMEM", "EMBERPROF_ASPROF_ROTATE",
	"EMBERPROF_UNWIND_CACHE", /* the unwind-table cache (src/agent/table_cache.h) */
};

typedef struct run_opts {
	const char *value[NENV_OPTS]; /* as given; NULL if not given */
	char *tags;                   /* --tag values joined with ',' */
	char *headers;                /* --header values joined with '\n' */
	unsigned long top;
	int quiet;
	int flame;                    /* --flame: write flame graph pages at exit */
	int cmd;                      /* index of CMD in argv */
} run_opts;

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
		"Options (each sets the EMBERPROF_* variable in brackets; see docs/CONFIG.md):\n"
		"  -r, --rate HZ            samples per second of CPU time, 1..10000 (100)\n"
		"                           [EMBERPROF_SAMPLE_RATE]\n"
		"  -i, --interval DURATION  reporting window, e.g. 10s, 500ms, 1m (10s)\n"
		"                           [EMBERPROF_INTERVAL]\n"
		"  -o, --output DIR         where profiles go (default: a new directory\n"
		"                           ./emberprof-CMD-yyyymmddTHHMMSS) [EMBERPROF_OUTPUT_DIR]\n"
		"      --format pprof|jfr|both\n"
		"                           files written there: gzip'd pprof per profile, one\n"
		"                           JFR recording per window, or both (pprof)\n"
		"                           [EMBERPROF_OUTPUT_FORMAT]\n"
		"  -d, --depth N            maximum frames per stack, 1..1024 (128)\n"
		"                           [EMBERPROF_MAX_DEPTH]\n"
		"  -a, --app NAME           application name (default: CMD's base name)\n"
		"                           [EMBERPROF_APP_NAME]\n"
		"  -t, --tag KEY=VALUE      a label on every sample; repeatable [EMBERPROF_TAGS]\n"
		"      --thread-labels      label samples with thread id and name\n"
		"                           [EMBERPROF_THREAD_LABELS]\n"
		"  -f, --follow-children    profile the whole process tree (the default): CMD\n"
		"                           whatever it execs into, and every process it\n"
		"                           starts, forked or exec'd [EMBERPROF_FOLLOW_CHILDREN]\n"
		"      --no-follow-children only the process CMD starts as (and what it execs\n"
		"                           in place) [EMBERPROF_FOLLOW_CHILDREN=0]\n"
		"      --no-kernel          no kernel frames (the tree engine shows them where\n"
		"                           perf events and kptr_restrict permit)\n"
		"                           [EMBERPROF_KERNEL=0]\n"
		"      --log-level LEVEL    off, error, warn, info or debug (warn)\n"
		"                           [EMBERPROF_LOG_LEVEL]\n"
		"      --unwind auto|fp|dwarf\n"
		"                           stack unwinding method (auto) [EMBERPROF_UNWIND]\n"
		"      --lines app|all|none file/line for the program's own code, every\n"
		"                           module, or none (app) [EMBERPROF_LINES]\n"
		"      --unwind-cache DIR|off\n"
		"                           where DWARF unwind tables are kept for the next\n"
		"                           process of the same binary, or off\n"
		"                           (~/.cache/emberprof/unwind) [EMBERPROF_UNWIND_CACHE]\n"
		"      --engine tree|auto|perf|timer|itimer\n"
		"                           CPU sampling engine [EMBERPROF_ENGINE]. tree: the\n"
		"                           whole tree sampled from outside by perf events,\n"
		"                           nothing loaded into it (CPU profiles in pprof); auto,\n"
		"                           perf, timer, itimer: the library preloaded into every\n"
		"                           process (auto: perf_events where permitted, else CPU\n"
		"                           timers). Default: tree where perf events count kernel\n"
		"                           time (root, perf_event_paranoid <= 1, or 2 on Linux\n"
		"                           6.12+) and no option needs the library, else auto\n"
		"      --wall[=INTERVAL]    also profile wall-clock time, every INTERVAL (50ms);\n"
		"                           one more profile per window [EMBERPROF_WALL]\n"
		"      --alloc[=BYTES]      also profile allocations (malloc & co), one sample per\n"
		"                           BYTES allocated on average (512k); one more profile\n"
		"                           per window, .memory.pb.gz [EMBERPROF_ALLOC]\n"
		"      --signal SIG         sampling signal, e.g. SIGPROF, SIGRTMIN+4\n"
		"                           [EMBERPROF_SIGNAL]\n"
		"      --server URL         also send each window to this Grafana Pyroscope\n"
		"                           server, e.g. http://localhost:4040 [EMBERPROF_SERVER_URL];\n"
		"                           without --output, profiles then only go there\n"
		"      --tenant ID          Pyroscope tenant (X-Scope-OrgID)\n"
		"                           [EMBERPROF_SERVER_TENANT_ID]\n"
		"      --auth-token TOKEN   bearer token [EMBERPROF_SERVER_AUTH_TOKEN]\n"
		"      --basic-auth USER:PASSWORD\n"
		"                           HTTP basic auth [EMBERPROF_SERVER_BASIC_AUTH_USER,\n"
		"                           EMBERPROF_SERVER_BASIC_AUTH_PASSWORD]\n"
		"      --header 'NAME: VALUE'\n"
		"                           an extra HTTP header; repeatable\n"
		"                           [EMBERPROF_SERVER_HEADERS]\n"
		"      --s3-bucket BUCKET   also upload each window to S3 as the async-profiler\n"
		"                           agent does (a zip with the JFR recording); AWS\n"
		"                           credentials from the standard chain [EMBERPROF_S3_BUCKET]\n"
		"      --s3-profiling-group NAME  the key's profiling group (the application\n"
		"                           name) [EMBERPROF_S3_PROFILING_GROUP]\n"
		"      --s3-bucket-owner ACCOUNT  expected bucket owner, 12 digits\n"
		"                           [EMBERPROF_S3_BUCKET_OWNER]\n"
		"      --s3-endpoint URL    an S3-compatible store, addressed path-style\n"
		"                           [EMBERPROF_S3_ENDPOINT]\n"
		"      --s3-region REGION   (AWS_REGION, the config file, IMDS) [EMBERPROF_S3_REGION]\n"
		"      --backend builtin|asprof\n"
		"                           who samples: emberprof's own sampler, or\n"
		"                           async-profiler (libasyncProfiler.so; JFR output,\n"
		"                           EMBERPROF_ASPROF_* settings) [EMBERPROF_BACKEND]\n"
		"  -n, --top N              rows in the summary table (20)\n"
		"  -q, --quiet              no summary table\n"
		"      --flame              at exit, also write flame.html (wall.html, alloc.html\n"
		"                           for those profiles) into the output directory\n"
		"  -h, --help               this help\n"
		"\n"
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
		for (size_t i = 0; i < NOPTIONS; i++)
			if (strlen(option_defs[i].name) == n && !strncmp(option_defs[i].name, name, n)) {
				if (name[n] == '=')
					*inline_value = name + n + 1;
				return (int)i;
			}
		return -1;
	}
	for (size_t i = 0; i < NOPTIONS; i++)
		if (option_defs[i].short_name && arg[1] == option_defs[i].short_name && !arg[2])
			return (int)i;
	return -1;
}

/* Appends one --tag KEY=VALUE to o->tags. Returns 0 or prints and fails. */
static int add_tag(run_opts *o, const char *tag)
{
	const char *eq = strchr(tag, '=');
	if (!eq || eq == tag) {
		ember__cli_error("run: --tag \"%s\" is invalid: expected KEY=VALUE", tag);
		return -1;
	}
	if (strchr(tag, ',')) {
		ember__cli_error("run: --tag \"%s\" is invalid: a tag may not contain ','", tag);
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
		ember__cli_error("run: --header \"%s\" is invalid: expected 'NAME: VALUE' on one line",
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

/* Handles one option with its value (NULL for a flag). 0, or 1 to stop. */
static int apply_option(run_opts *o, int id, const char *value)
{
	switch (id) {
	case OPT_TOP:
		if (ember__cli_parse_count(value, 1, 1000000, &o->top) < 0) {
			ember__cli_error("run: --top \"%s\" is invalid: expected a number of rows, "
					 "1..1000000",
					 value);
			return -1;
		}
		return 0;
	case OPT_QUIET:
		o->quiet = 1;
		return 0;
	case OPT_FLAME:
		o->flame = 1;
		return 0;
	case OPT_HELP:
		ember__cli_run_usage(stdout);
		return 1;
	case OPT_TAG:
		return add_tag(o, value);
	case OPT_HEADER:
		return add_header(o, value);
	case OPT_BASIC_AUTH: {
		const char *colon = strchr(value, ':');
		if (!colon || colon == value || !colon[1]) {
			ember__cli_error("run: --basic-auth is invalid: expected USER:PASSWORD");
			return -1;
		}
		o->value[id] = value;
		return 0;
	}
	case OPT_THREAD_LABELS:
	case OPT_FOLLOW:
	case OPT_KERNEL:
		o->value[id] = "1";
		return 0;
	case OPT_NO_FOLLOW:
	case OPT_NO_KERNEL:
		o->value[id == OPT_NO_FOLLOW ? OPT_FOLLOW : OPT_KERNEL] = "0";
		return 0;
	case OPT_WALL:
	case OPT_ALLOC:
		o->value[id] = value ? value : "on";
		return 0;
	case OPT_OUTPUT:
	case OPT_APP:
		if (!*value) {
			ember__cli_error("run: --%s needs a non-empty value", option_defs[id].name);
			return -1;
		}
		o->value[id] = value;
		return 0;
	default:
		o->value[id] = value;
		return 0;
	}
}

/*
 * Parses argv (argv[0] is "run"). Returns -1 to go on (o filled, o->cmd
 * set), else the exit code to return right away.
 */
static int parse_args(int argc, char **argv, run_opts *o)
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
			ember__cli_error("run: unknown option '%s'", arg);
			ember__cli_run_usage(stderr);
			return EMBER_EXIT_USAGE;
		}
		const option_def *d = &option_defs[id];
		unsigned wall_ms;
		/* --wall 20ms; --alloc takes its value only as --alloc=BYTES */
		if (id == OPT_WALL && !value && i + 1 < argc &&
		    ember__parse_wall(argv[i + 1], &wall_ms) == 0)
			value = argv[++i]; /* --wall 20ms */
		if (d->has_value == 1 && !value) {
			if (i + 1 >= argc || !strcmp(argv[i + 1], "--")) {
				ember__cli_error("run: option --%s needs a value", d->name);
				return EMBER_EXIT_USAGE;
			}
			value = argv[++i];
		} else if (!d->has_value && value) {
			ember__cli_error("run: option --%s takes no value", d->name);
			return EMBER_EXIT_USAGE;
		}
		int rc = apply_option(o, id, value);
		if (rc)
			return rc > 0 ? 0 : EMBER_EXIT_USAGE;
	}
	if (i >= argc) {
		ember__cli_error("run: no command given");
		ember__cli_run_usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	o->cmd = i;
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
	if (id == OPT_TAG)
		return o->tags;
	if (id == OPT_HEADER)
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
	for (int id = 0; id < NENV_OPTS; id++) {
		const char *v = option_value(o, id);
		if (!v)
			continue;
		if (id == OPT_BASIC_AUTH) {
			if (export_basic_auth(v))
				return -1;
		} else if (id == OPT_OUTPUT || (id == OPT_UNWIND_CACHE && v[0] != '/' &&
						strcmp(v, "off") != 0 && strcmp(v, "on") != 0)) {
			char *abs = ember__cli_absolute(v);
			if (!abs) {
				ember__cli_error("%s", ember_last_error());
				return -1;
			}
			int rc = set_var(option_defs[id].env, abs);
			free(abs);
			if (rc)
				return rc;
		} else if (set_var(option_defs[id].env, v)) {
			return -1;
		}
	}
	/* An inherited relative output directory: pin it before CMD can chdir. */
	const char *dir = getenv(EMBER_ENV_OUTPUT_DIR);
	if (!o->value[OPT_OUTPUT] && dir && *dir && dir[0] != '/') {
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
	for (int id = 0; id < NENV_OPTS; id++) {
		const char *v = option_value(o, id);
		char needle[64];
		snprintf(needle, sizeof(needle), "%s=", option_defs[id].env);
		if (v && (strstr(msg, needle) ||
			  (id == OPT_BASIC_AUTH && strstr(msg, "EMBERPROF_SERVER_BASIC_AUTH_PASSWORD=")))) {
			ember__cli_error("run: invalid --%s: %s", option_defs[id].name, msg);
			return;
		}
	}
	ember__cli_error("run: %s", msg);
}

/*
 * Applies the whole environment to a throw-away builder. 0 or exit code.
 * *alloc_hook: whether the program needs emberprof's malloc (allocation
 * profiling on, with a backend that may be emberprof's own).
 */
static int validate_environment(const run_opts *o, int *alloc_hook)
{
	ember_builder *b = NULL;
	const char *autostart = getenv(EMBER_ENV_AUTOSTART);
	int flag;
	if (autostart && ember__parse_bool(autostart, &flag) < 0) {
		char shown[256];
		ember__cli_error("run: environment variable %s=\"%s\" is invalid: expected 0 or 1",
				 EMBER_ENV_AUTOSTART,
				 ember__redact_value(EMBER_ENV_AUTOSTART, autostart, shown, sizeof(shown)));
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
		for (size_t i = 0; i < sizeof(known_vars) / sizeof(known_vars[0]); i++)
			if (strlen(known_vars[i]) == n && !strncmp(known_vars[i], *e, n))
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
	char *path = NULL, *dir = NULL;
	run_engine e = { 0 };

	int code = parse_args(argc, argv, &o);
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
	const char *given = getenv(EMBER_ENV_OUTPUT_DIR);
	if (!(given && *given) && server_configured()) {
		code = EMBER_EXIT_INTERNAL;
		if (set_var(EMBER_ENV_AUTOSTART, "1") < 0 || (code = start_engine(&e, tree)) != 0)
			goto out;
		int killed_by;
		if (spawn_program(&e, path, argv + o.cmd, &code, &killed_by) == 0 && killed_by)
			ember__cli_error("%s was killed by signal %d (%s)", argv[o.cmd], killed_by,
					 strsignal(killed_by));
		goto out;
	}
	if (given && *given) {
		code = EMBER_EXIT_INTERNAL;
		if (!(dir = strdup(given))) {
			ember__cli_error("out of memory");
			goto out;
		}
	} else {
		if (ember__cli_make_default_outdir(cmd, &dir) < 0) {
			ember__cli_error("%s", ember_last_error());
			code = EMBER_EXIT_USAGE;
			goto out;
		}
		code = EMBER_EXIT_INTERNAL;
		if (set_var(EMBER_ENV_OUTPUT_DIR, dir) < 0)
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
	return code;
}
