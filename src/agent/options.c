/* SPDX-License-Identifier: Apache-2.0 */
/*
 * options.c - the table of environment variables (options.h) and the
 * reader it drives. Every rejection names the variable and the value (a
 * secret's value is never shown). Not async-signal-safe.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_internal.h"
#include "agent/options.h"
#include "util/envsnap.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/redact.h"

_Static_assert(sizeof(ember_pyroscope_protocol) == sizeof(int), "stored as an int");

/* ---- parsers of CUSTOM rows ---- */

/* util/parse.h's parsers as the table's: the value into x->u (or x->i). */
#define PARSER_U(fn, parser, type)                                                   \
	static int fn(const char *s, ember__opt_value *x)                            \
	{                                                                            \
		type v;                                                              \
		int rc = parser(s, &v);                                              \
		x->u = v;                                                            \
		return rc;                                                           \
	}
PARSER_U(p_wall, ember__parse_wall, unsigned)
PARSER_U(p_formats, ember__parse_formats, unsigned)
PARSER_U(p_bytes, ember__parse_bytes, uint64_t)
PARSER_U(p_alloc, ember__parse_alloc, uint64_t)

static int p_signal(const char *s, ember__opt_value *x)
{
	return ember__parse_signal(s, &x->i);
}

static int p_log_level(const char *s, ember__opt_value *x)
{
	return ember__parse_log_level(s, &x->i);
}

/* The server's validation.reject-older-than: "0" for a server that has
 * it off (no limit: UINT_MAX), else a duration of whole seconds, >= 1m. */
static int p_max_age(const char *s, ember__opt_value *x)
{
	unsigned ms;
	if (!strcmp(s, "0")) {
		x->u = UINT_MAX;
		return 0;
	}
	if (ember__parse_duration_ms(s, &ms) || ms < 60000 || ms % 1000)
		return -1;
	x->u = ms / 1000;
	return 0;
}

/* ---- apply() of the builder's rows ---- */

#define CFG(c) (&(c)->b->cfg)

static int a_app_name(ember__opt_ctx *c, const ember__option *o, const char *v, ember__opt_value x)
{
	(void)o;
	(void)x;
	char *s = strdup(v);
	if (!s)
		return ember__error_oom("application name");
	free(CFG(c)->app_name);
	CFG(c)->app_name = s;
	return 0;
}

/* EMBERPROF_ALLOC_SAMPLE_BYTES sets the mean; it turns nothing on. */
static int a_alloc_sample(ember__opt_ctx *c, const ember__option *o, const char *v,
			  ember__opt_value x)
{
	(void)o;
	(void)v;
	c->alloc_mean = x.u;
	if (CFG(c)->alloc_mean)
		CFG(c)->alloc_mean = x.u;
	return 0;
}

/* EMBERPROF_ALLOC turns allocation profiling on (with a mean, optionally). */
static int a_alloc(ember__opt_ctx *c, const ember__option *o, const char *v, ember__opt_value x)
{
	(void)o;
	(void)v;
	CFG(c)->alloc_mean = x.u && c->alloc_mean ? c->alloc_mean : x.u;
	return 0;
}

static int a_signal(ember__opt_ctx *c, const ember__option *o, const char *v, ember__opt_value x)
{
	if (ember_builder_set_signal(c->b, x.i))
		return ember__opt_bad(o->name, v, 0, o->expect);
	return 0;
}

static int a_symbolize(ember__opt_ctx *c, const ember__option *o, const char *v,
		       ember__opt_value x)
{
	(void)o;
	(void)v;
	c->b->cfg.no_symbolize = !x.i;
	return 0;
}

/* k=v[,k=v...] tags. */
static int a_tags(ember__opt_ctx *c, const ember__option *o, const char *list, ember__opt_value x)
{
	(void)x;
	char *copy = strdup(list), *save = NULL;
	if (!copy)
		return ember__error_oom("tags");
	int rc = 0;
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		while (*item == ' ')
			item++;
		char *eq = strchr(item, '=');
		if (!eq || eq == item) {
			rc = ember__opt_bad(o->name, list, 0, o->expect);
			break;
		}
		*eq = '\0';
		if (ember_builder_add_tag(c->b, item, eq + 1)) {
			rc = ember__opt_bad_last(o->name, list, 0);
			break;
		}
	}
	free(copy);
	return rc;
}

static int a_output_format(ember__opt_ctx *c, const ember__option *o, const char *v,
			   ember__opt_value x)
{
	c->formats = (unsigned)x.u;
	if (CFG(c)->backend == EMBER_BACKEND_ASYNC_PROFILER && c->formats != EMBER_FORMAT_JFR)
		return ember__opt_bad(o->name, v, 0, "the async-profiler backend "
				      "(EMBERPROF_BACKEND=asprof) writes jfr only");
	return 0;
}

static int a_output_dir(ember__opt_ctx *c, const ember__option *o, const char *v,
			ember__opt_value x)
{
	(void)x;
	ember_reporter r;
	int rc = ember_reporter_local_ex(&r, v, c->formats);
	if (rc == 0) {
		rc = ember_builder_add_reporter(c->b, &r);
		if (rc && r.destroy)
			r.destroy(r.userdata);
	}
	return rc ? ember__opt_bad_last(o->name, v, 0) : 0;
}

/* A file that must be readable (a CA bundle), kept as a path. */
static int a_readable_file(ember__opt_ctx *c, const ember__option *o, const char *v,
			   ember__opt_value x)
{
	(void)x;
	if (access(v, R_OK) < 0)
		return ember__opt_bad(o->name, v, 0, strerror(errno));
	*(const char **)((char *)c->target + o->offset) = v;
	return 0;
}

/* ---- the table ---- */

static const ember__opt_choice unwind_modes[] = {
	{"auto", EMBER_UNWIND_AUTO}, {"fp", EMBER_UNWIND_FP}, {"dwarf", EMBER_UNWIND_DWARF}, {NULL, 0}};
static const ember__opt_choice engines[] = {
	{"auto", EMBER_ENGINE_AUTO},	      {"timer", EMBER_ENGINE_THREAD_TIMER},
	{"thread-timer", EMBER_ENGINE_THREAD_TIMER}, {"itimer", EMBER_ENGINE_PROCESS_TIMER},
	{"process-timer", EMBER_ENGINE_PROCESS_TIMER}, {"perf", EMBER_ENGINE_PERF},
	{NULL, 0}};
static const ember__opt_choice alloc_backends[] = {{"auto", EMBER_ALLOC_BACKEND_AUTO},
						   {"emberprof", EMBER_ALLOC_BACKEND_EMBERPROF},
						   {"jemalloc", EMBER_ALLOC_BACKEND_JEMALLOC},
						   {NULL, 0}};
static const ember__opt_choice line_modes[] = {
	{"app", EMBER_LINES_APP}, {"all", EMBER_LINES_ALL}, {"none", EMBER_LINES_NONE}, {NULL, 0}};
static const ember__opt_choice protocols[] = {
	{"push", EMBER_PYROSCOPE_PUSH}, {"ingest", EMBER_PYROSCOPE_INGEST}, {NULL, 0}};
static const ember__opt_choice s3_hosts[] = {
	{"detect", EMBER_HOST_DETECT}, {"onprem", EMBER_HOST_ONPREM}, {"none", EMBER_HOST_NONE},
	{NULL, 0}};

#define EMPTY EMBER__OPTF_EMPTY_UNSET
#define BOOL_EXPECT "expected 0 or 1"
#define IN_CFG(field) .offset = offsetof(ember__config, field)
#define IN_PYRO(field) .offset = offsetof(ember_pyroscope_options, field)
#define IN_S3(field) .offset = offsetof(ember_s3_options, field)
#define JAVA_NOTE "a bare number is nanoseconds, as in the Java agent"

const ember__option ember__options[] = {
	/* ---- the builder's, in the order they are applied ---- */
	{.name = "EMBERPROF_APP_NAME", .reader = EMBER__OPT_BUILDER, .flags = EMPTY,
	 .apply = a_app_name, .values = "NAME", .opt = "app", .opt_short = 'a', .opt_arg = 1,
	 .help = "application name (default: CMD's base name)"},
	{.name = "EMBERPROF_SAMPLE_RATE", .kind = EMBER__OPT_UINT, .min = 1, .max = 10000,
	 .expect = "expected a rate in Hz, 1..10000", .store = EMBER__STORE_UINT, IN_CFG(hz),
	 .values = "HZ", .deflt = "100", .opt = "rate", .opt_short = 'r', .opt_arg = 1,
	 .help = "samples per second of CPU time, 1..10000"},
	{.name = "EMBERPROF_INTERVAL", .kind = EMBER__OPT_DURATION, .min = 100, .max = 3600000,
	 .expect = "expected a duration such as 10s, 500ms or 1m (100ms..1h)",
	 .store = EMBER__STORE_UINT, IN_CFG(interval_ms), .values = "DURATION", .deflt = "10s",
	 .opt = "interval", .opt_short = 'i', .opt_arg = 1,
	 .help = "reporting window, e.g. 10s, 500ms, 1m"},
	/* the output (applied after the backend's, which decides its format) */
	{.name = "EMBERPROF_OUTPUT_FORMAT", .reader = EMBER__OPT_OUTPUT, .kind = EMBER__OPT_CUSTOM,
	 .flags = EMPTY, .parse = p_formats, .expect = "expected pprof, jfr or both",
	 .apply = a_output_format, .values = "pprof|jfr|both", .deflt = "pprof", .opt = "format",
	 .opt_arg = 1,
	 .help = "files written there: gzip'd pprof per profile, one JFR recording per window, "
		 "or both"},
	{.name = "EMBERPROF_OUTPUT_DIR", .reader = EMBER__OPT_OUTPUT, .flags = EMPTY,
	 .apply = a_output_dir, .values = "DIR", .opt = "output", .opt_short = 'o', .opt_arg = 1,
	 .help = "where profiles go (default: a new directory ./emberprof-CMD-yyyymmddTHHMMSS)"},
	{.name = "EMBERPROF_MAX_DEPTH", .kind = EMBER__OPT_UINT, .min = 1, .max = 1024,
	 .expect = "expected a depth, 1..1024", .store = EMBER__STORE_UINT, IN_CFG(max_depth),
	 .values = "N", .deflt = "128", .opt = "depth", .opt_short = 'd', .opt_arg = 1,
	 .help = "maximum frames per stack, 1..1024"},
	{.name = "EMBERPROF_UNWIND", .kind = EMBER__OPT_CHOICE, .choices = unwind_modes,
	 .expect = "expected auto, fp or dwarf", .store = EMBER__STORE_INT, IN_CFG(unwind),
	 .values = "auto|fp|dwarf", .deflt = "auto", .opt = "unwind", .opt_arg = 1,
	 .help = "stack unwinding method"},
	{.name = "EMBERPROF_UNWIND_CACHE", .reader = EMBER__OPT_ELSEWHERE,
	 .where = "table_cache.c, the unwind-table cache", .values = "DIR|off", .opt = "unwind-cache",
	 .opt_arg = 1, .deflt = "~/.cache/emberprof/unwind",
	 .help = "where DWARF unwind tables are kept for the next process of the same binary, "
		 "or off"},
	{.name = "EMBERPROF_ENGINE", .kind = EMBER__OPT_CHOICE, .choices = engines,
	 .expect = "expected auto, perf, timer or itimer", .store = EMBER__STORE_INT,
	 IN_CFG(engine), .values = "tree|auto|perf|timer|itimer", .opt = "engine", .opt_arg = 1,
	 .help = "CPU sampling engine. tree: the whole tree sampled from outside by perf events, "
		 "nothing loaded into it (CPU profiles in pprof); auto, perf, timer, itimer: the "
		 "library preloaded into every process (auto: perf_events where permitted, else "
		 "CPU timers). Default: tree where perf events count kernel time (root, "
		 "perf_event_paranoid <= 1, or 2 on Linux 6.12+) and no option needs the library, "
		 "else auto"},
	{.name = "EMBERPROF_WALL", .kind = EMBER__OPT_CUSTOM, .parse = p_wall,
	 .expect = "expected off, on (50ms) or an interval such as 50ms or 0.2s (1ms..60s)",
	 .store = EMBER__STORE_UINT, IN_CFG(wall_ms), .values = "INTERVAL", .opt = "wall",
	 .opt_arg = 2,
	 .help = "also profile wall-clock time, every INTERVAL (50ms); one more profile per "
		 "window"},
	{.name = "EMBERPROF_ALLOC_SAMPLE_BYTES", .kind = EMBER__OPT_CUSTOM, .parse = p_bytes,
	 .expect = "expected a byte count such as 524288, 512k or 1m (1..1g)",
	 .apply = a_alloc_sample, .values = "BYTES", .deflt = "512k"},
	{.name = "EMBERPROF_ALLOC", .kind = EMBER__OPT_CUSTOM, .parse = p_alloc,
	 .expect = "expected off, on, or a sampling mean such as 512k or 1m (1..1g)",
	 .apply = a_alloc, .values = "BYTES", .opt = "alloc", .opt_arg = 2,
	 .help = "also profile allocations (malloc & co), one sample per BYTES allocated on "
		 "average (512k); one more profile per window, .memory.pb.gz"},
	{.name = "EMBERPROF_ALLOC_BACKEND", .kind = EMBER__OPT_CHOICE, .choices = alloc_backends,
	 .expect = "expected auto, emberprof or jemalloc", .store = EMBER__STORE_INT,
	 IN_CFG(alloc_backend), .values = "auto|emberprof|jemalloc", .deflt = "auto"},
	{.name = "EMBERPROF_POLLCATCH_THRESHOLD", .kind = EMBER__OPT_DURATION, .min = 0,
	 .max = 3600000, .expect = "expected a duration such as 10ms or 0.5s (0..1h)",
	 .store = EMBER__STORE_UINT, IN_CFG(poll_threshold_ms), .values = "DURATION",
	 .deflt = "10ms"},
	/* makes the perf_events engine act as if the kernel refused it (the fallback's tests) */
	{.name = "EMBERPROF_ENGINE_PERF_DISABLE", .kind = EMBER__OPT_BOOL, .flags = EMBER__OPTF_TEST,
	 .expect = BOOL_EXPECT, .store = EMBER__STORE_INT, IN_CFG(perf_refuse), .values = "0|1"},
	/* the wall-clock thread signals idle threads too (their tests' control) */
	{.name = "EMBERPROF_WALL_SIGNAL_IDLE", .kind = EMBER__OPT_BOOL, .flags = EMBER__OPTF_TEST,
	 .expect = BOOL_EXPECT, .store = EMBER__STORE_INT, IN_CFG(wall_signal_idle), .values = "0|1"},
	{.name = "EMBERPROF_SIGNAL", .kind = EMBER__OPT_CUSTOM, .parse = p_signal,
	 .expect = "expected a signal name or number such as SIGPROF or SIGRTMIN+4",
	 .apply = a_signal, .values = "SIG", .deflt = "SIGPROF", .opt = "signal", .opt_arg = 1,
	 .help = "sampling signal, e.g. SIGPROF, SIGRTMIN+4"},
	{.name = "EMBERPROF_LINES", .kind = EMBER__OPT_CHOICE, .choices = line_modes,
	 .expect = "expected app, all or none", .store = EMBER__STORE_INT, IN_CFG(lines),
	 .values = "app|all|none", .deflt = "app", .opt = "lines", .opt_arg = 1,
	 .help = "file/line for the program's own code, every module, or none"},
	/* 0: profiles keep addresses, mappings and build ids only (no symbol
	 * table or DWARF read in the host); `emberprof symbolize` names them */
	{.name = "EMBERPROF_SYMBOLIZE", .kind = EMBER__OPT_BOOL, .expect = BOOL_EXPECT,
	 .apply = a_symbolize, .values = "0|1", .deflt = "1", .opt = "symbolize",
	 .help = "name the frames in the program (the default); --no-symbolize: addresses, "
		 "mappings and build ids only, named later by `emberprof symbolize`"},
	{.name = "EMBERPROF_THREAD_LABELS", .kind = EMBER__OPT_BOOL, .expect = BOOL_EXPECT,
	 .store = EMBER__STORE_INT, IN_CFG(thread_labels), .values = "0|1",
	 .opt = "thread-labels", .help = "label samples with thread id and name"},
	{.name = "EMBERPROF_LOG_LEVEL", .kind = EMBER__OPT_CUSTOM, .parse = p_log_level,
	 .expect = "expected off, error, warn, info or debug", .store = EMBER__STORE_INT,
	 IN_CFG(log.level), .values = "LEVEL", .deflt = "warn", .opt = "log-level", .opt_arg = 1,
	 .help = "off, error, warn, info or debug"},
	{.name = "EMBERPROF_TAGS", .flags = EMPTY, .expect = "expected key=value[,key=value...]",
	 .apply = a_tags, .values = "KEY=VALUE", .opt = "tag", .opt_short = 't', .opt_arg = 1,
	 .help = "a label on every sample; repeatable"},
	/* checked here, followed by the preloaded library (src/preload/preload.c) */
	{.name = "EMBERPROF_FOLLOW_CHILDREN", .kind = EMBER__OPT_BOOL, .expect = BOOL_EXPECT,
	 .values = "0|1", .deflt = NULL, .opt = "follow-children", .opt_short = 'f',
	 .help = "profile the whole process tree (the default): CMD whatever it execs into, and "
		 "every process it starts, forked or exec'd"},
	/* read by the tree engine's driver (cli/run_tree.c) */
	{.name = "EMBERPROF_KERNEL", .reader = EMBER__OPT_ELSEWHERE, .kind = EMBER__OPT_BOOL,
	 .expect = BOOL_EXPECT, .values = "0|1", .deflt = "1", .opt = "kernel",
	 .where = "cli/run_tree.c, the tree engine's kernel frames",
	 .help = "the kernel's frames (the tree engine, where perf events sample the kernel: "
		 "named from /proc/kallsyms, or one [kernel] frame where kptr_restrict hides "
		 "them)"},

	/* ---- the backend's (src/asprof/asprof_config.c), before the output ---- */
	{.name = "EMBERPROF_BACKEND", .reader = EMBER__OPT_ASPROF, .values = "builtin|asprof",
	 .opt = "backend", .opt_arg = 1, .where = "src/asprof/asprof_config.c",
	 .help = "who samples: emberprof's own sampler, or async-profiler "
		 "(libasyncProfiler.so; JFR output, EMBERPROF_ASPROF_* settings)"},
	{.name = "EMBERPROF_ASPROF_LIB", .reader = EMBER__OPT_ASPROF, .values = "PATH",
	 .where = "src/asprof/asprof_config.c"},
	{.name = "EMBERPROF_ASPROF_CPU_INTERVAL", .reader = EMBER__OPT_ASPROF,
	 .values = "DURATION", .deflt = "100ms", .where = "src/asprof/asprof_config.c"},
	{.name = "EMBERPROF_ASPROF_WALL_INTERVAL", .reader = EMBER__OPT_ASPROF,
	 .values = "DURATION", .deflt = "1s", .where = "src/asprof/asprof_config.c"},
	{.name = "EMBERPROF_ASPROF_NATIVEMEM", .reader = EMBER__OPT_ASPROF, .values = "off|BYTES",
	 .deflt = "off", .where = "src/asprof/asprof_config.c"},
	{.name = "EMBERPROF_ASPROF_ROTATE", .reader = EMBER__OPT_ASPROF, .values = "dump|stop",
	 .deflt = "dump", .where = "src/asprof/asprof_config.c"},

	/* ---- the S3 reporter's (env_s3.c; the AWS_* ones are the reporter's own) ---- */
	{.name = "EMBERPROF_S3_BUCKET", .reader = EMBER__OPT_S3, .flags = EMPTY | EMBER__OPTF_BY_CODE,
	 .values = "BUCKET", .opt = "s3-bucket", .opt_arg = 1,
	 .help = "also upload each window to S3 as the async-profiler agent does (a zip with "
		 "the JFR recording); AWS credentials from the standard chain"},
	{.name = "EMBERPROF_S3_PROFILING_GROUP", .reader = EMBER__OPT_S3, .flags = EMPTY,
	 .store = EMBER__STORE_STR, IN_S3(profiling_group), .values = "NAME",
	 .opt = "s3-profiling-group", .opt_arg = 1,
	 .help = "the key's profiling group (the application name)"},
	{.name = "EMBERPROF_S3_BUCKET_OWNER", .reader = EMBER__OPT_S3, .flags = EMPTY,
	 .store = EMBER__STORE_STR, IN_S3(bucket_owner), .values = "ACCOUNT",
	 .opt = "s3-bucket-owner", .opt_arg = 1, .help = "expected bucket owner, 12 digits"},
	{.name = "EMBERPROF_S3_ENDPOINT", .reader = EMBER__OPT_S3, .flags = EMPTY,
	 .store = EMBER__STORE_STR, IN_S3(endpoint), .values = "URL", .opt = "s3-endpoint",
	 .opt_arg = 1, .help = "an S3-compatible store, addressed path-style"},
	{.name = "EMBERPROF_S3_REGION", .reader = EMBER__OPT_S3, .flags = EMPTY,
	 .store = EMBER__STORE_STR, IN_S3(region), .values = "REGION", .opt = "s3-region",
	 .opt_arg = 1, .help = "the bucket's region (AWS_REGION, the config file, IMDS)"},
	{.name = "EMBERPROF_S3_AWS_PROFILE", .reader = EMBER__OPT_S3, .flags = EMPTY,
	 .store = EMBER__STORE_STR, IN_S3(aws_profile), .values = "PROFILE"},
	{.name = "EMBERPROF_S3_SPOOL_DIR", .reader = EMBER__OPT_S3, .flags = EMPTY,
	 .store = EMBER__STORE_STR, IN_S3(spool_dir), .values = "DIR"},
	{.name = "EMBERPROF_S3_HOST", .reader = EMBER__OPT_S3, .kind = EMBER__OPT_CHOICE,
	 .flags = EMPTY | EMBER__OPTF_BY_CODE, .choices = s3_hosts,
	 .expect = "expected detect, onprem or none", .values = "detect|onprem|none",
	 .deflt = "detect"},

	/* ---- the OTLP reporter's (src/report/otlp_env.c, with the OTEL_* variables) ---- */
	{.name = "EMBERPROF_OTLP_URL", .reader = EMBER__OPT_ELSEWHERE,
	 .where = "src/report/otlp_env.c, the OTLP reporter", .values = "URL", .opt = "otlp",
	 .opt_arg = 1,
	 .help = "also send each window to this OpenTelemetry collector over OTLP/HTTP "
		 "(/v1development/profiles appended), e.g. http://localhost:4318; headers, "
		 "compression, timeout from OTEL_EXPORTER_OTLP_*"},
	{.name = "EMBERPROF_OTLP", .reader = EMBER__OPT_ELSEWHERE,
	 .where = "src/report/otlp_env.c, the OTLP reporter", .values = "on|off", .deflt = "off"},
	{.name = "EMBERPROF_OTLP_SPOOL_DIR", .reader = EMBER__OPT_ELSEWHERE,
	 .where = "src/report/otlp_env.c, the OTLP reporter", .values = "DIR"},

	/* ---- Pyroscope's agents' names for the builder's settings (env_pyroscope.c),
	 * read only with a server URL, each where emberprof's own is unset ---- */
	{.name = "PYROSCOPE_APPLICATION_NAME", .reader = EMBER__OPT_PYRO_APP,
	 .flags = EMPTY | EMBER__OPTF_FOREIGN, .apply = ember__pyro_apply_app_name,
	 .fallback_of = "EMBERPROF_APP_NAME", .values = "NAME{k=v,...}"},
	{.name = "PYROSCOPE_SAMPLE_RATE", .reader = EMBER__OPT_PYRO_APP, .kind = EMBER__OPT_UINT,
	 .flags = EMPTY | EMBER__OPTF_FOREIGN, .min = 1, .max = 10000,
	 .expect = "expected a rate in Hz, 1..10000", .store = EMBER__STORE_UINT, IN_CFG(hz),
	 .fallback_of = "EMBERPROF_SAMPLE_RATE", .values = "HZ"},
	{.name = "PYROSCOPE_UPLOAD_INTERVAL", .reader = EMBER__OPT_PYRO_APP,
	 .kind = EMBER__OPT_CUSTOM, .flags = EMPTY | EMBER__OPTF_FOREIGN,
	 .parse = ember__pyro_parse_java_interval, .min = 100, .max = 3600000,
	 .expect = "expected a duration such as 10s or 500ms (100ms..1h; " JAVA_NOTE ")",
	 .store = EMBER__STORE_UINT, IN_CFG(interval_ms), .fallback_of = "EMBERPROF_INTERVAL",
	 .values = "DURATION"},
	{.name = "PYROSCOPE_LABELS", .reader = EMBER__OPT_PYRO_APP,
	 .flags = EMPTY | EMBER__OPTF_FOREIGN, .apply = ember__pyro_apply_labels,
	 .values = "k=v,..."},

	/* ---- the Pyroscope reporter's (env_pyroscope.c), in the order read ---- */
	{.name = "EMBERPROF_SERVER_URL", .reader = EMBER__OPT_SERVER,
	 .flags = EMPTY | EMBER__OPTF_BY_CODE, .values = "URL", .opt = "server", .opt_arg = 1,
	 .help = "also send each window to this Grafana Pyroscope server, e.g. "
		 "http://localhost:4040; without --output, profiles then only go there"},
	{.name = "PYROSCOPE_SERVER_ADDRESS", .reader = EMBER__OPT_SERVER,
	 .flags = EMPTY | EMBER__OPTF_FOREIGN | EMBER__OPTF_BY_CODE,
	 .fallback_of = "EMBERPROF_SERVER_URL", .values = "URL"},
	{.name = "EMBERPROF_SERVER_AUTH_TOKEN", .reader = EMBER__OPT_SERVER,
	 .flags = EMPTY | EMBER__OPTF_SECRET | EMBER__OPTF_BY_CODE, .values = "TOKEN",
	 .opt = "auth-token", .opt_arg = 1, .help = "bearer token"},
	{.name = "EMBERPROF_SERVER_BASIC_AUTH_USER", .reader = EMBER__OPT_SERVER,
	 .flags = EMPTY | EMBER__OPTF_BY_CODE, .values = "USER:PASSWORD", .opt = "basic-auth",
	 .opt_arg = 1,
	 .help = "HTTP basic auth (sets EMBERPROF_SERVER_BASIC_AUTH_PASSWORD too)"},
	{.name = "EMBERPROF_SERVER_BASIC_AUTH_PASSWORD", .reader = EMBER__OPT_SERVER,
	 .flags = EMPTY | EMBER__OPTF_SECRET | EMBER__OPTF_BY_CODE, .values = "PASSWORD"},
	{.name = "PYROSCOPE_AUTH_TOKEN", .reader = EMBER__OPT_SERVER,
	 .flags = EMPTY | EMBER__OPTF_SECRET | EMBER__OPTF_FOREIGN | EMBER__OPTF_BY_CODE,
	 .fallback_of = "EMBERPROF_SERVER_AUTH_TOKEN", .values = "TOKEN"},
	{.name = "PYROSCOPE_BASIC_AUTH_USER", .reader = EMBER__OPT_SERVER,
	 .flags = EMPTY | EMBER__OPTF_FOREIGN | EMBER__OPTF_BY_CODE,
	 .fallback_of = "EMBERPROF_SERVER_BASIC_AUTH_USER", .values = "USER"},
	{.name = "PYROSCOPE_BASIC_AUTH_PASSWORD", .reader = EMBER__OPT_SERVER,
	 .flags = EMPTY | EMBER__OPTF_SECRET | EMBER__OPTF_FOREIGN | EMBER__OPTF_BY_CODE,
	 .fallback_of = "EMBERPROF_SERVER_BASIC_AUTH_PASSWORD", .values = "PASSWORD"},
	{.name = "EMBERPROF_SERVER_PROTOCOL", .reader = EMBER__OPT_SERVER,
	 .kind = EMBER__OPT_CHOICE, .flags = EMPTY, .choices = protocols,
	 .expect = "expected push or ingest", .store = EMBER__STORE_INT, IN_PYRO(protocol),
	 .values = "push|ingest", .deflt = "push"},
	{.name = "EMBERPROF_SERVER_TENANT_ID", .reader = EMBER__OPT_SERVER, .flags = EMPTY,
	 .apply = ember__pyro_apply_tenant, IN_PYRO(tenant_id), .values = "ID", .opt = "tenant",
	 .opt_arg = 1, .help = "Pyroscope tenant (X-Scope-OrgID)"},
	{.name = "PYROSCOPE_TENANT_ID", .reader = EMBER__OPT_SERVER,
	 .flags = EMPTY | EMBER__OPTF_FOREIGN, .apply = ember__pyro_apply_tenant,
	 IN_PYRO(tenant_id), .fallback_of = "EMBERPROF_SERVER_TENANT_ID", .values = "ID"},
	{.name = "EMBERPROF_SERVER_HEADERS", .reader = EMBER__OPT_SERVER,
	 .flags = EMPTY | EMBER__OPTF_SECRET, .apply = ember__pyro_apply_headers,
	 .values = "'NAME: VALUE'", .opt = "header", .opt_arg = 1,
	 .help = "an extra HTTP header; repeatable"},
	{.name = "PYROSCOPE_HTTP_HEADERS", .reader = EMBER__OPT_SERVER,
	 .flags = EMPTY | EMBER__OPTF_SECRET | EMBER__OPTF_FOREIGN,
	 .apply = ember__pyro_apply_headers, .fallback_of = "EMBERPROF_SERVER_HEADERS",
	 .values = "{JSON}"},
	{.name = "EMBERPROF_SERVER_CA_FILE", .reader = EMBER__OPT_SERVER, .flags = EMPTY,
	 .apply = a_readable_file, IN_PYRO(ca_file), .values = "FILE"},
	{.name = "EMBERPROF_SERVER_INSECURE", .reader = EMBER__OPT_SERVER, .kind = EMBER__OPT_BOOL,
	 .expect = BOOL_EXPECT, .store = EMBER__STORE_INT, IN_PYRO(insecure), .values = "0|1"},
	{.name = "EMBERPROF_SERVER_CONNECT_TIMEOUT", .reader = EMBER__OPT_SERVER,
	 .kind = EMBER__OPT_DURATION, .flags = EMPTY, .min = 1, .max = 600000,
	 .expect = "expected a duration such as 5s (at most 10m)", .store = EMBER__STORE_UINT,
	 IN_PYRO(connect_timeout_ms), .values = "DURATION", .deflt = "5s"},
	{.name = "EMBERPROF_SERVER_TIMEOUT", .reader = EMBER__OPT_SERVER,
	 .kind = EMBER__OPT_DURATION, .flags = EMPTY, .min = 1, .max = 3600000,
	 .expect = "expected a duration such as 30s (at most 1h)", .store = EMBER__STORE_UINT,
	 IN_PYRO(timeout_ms), .values = "DURATION", .deflt = "30s"},
	{.name = "PYROSCOPE_PROFILE_EXPORT_TIMEOUT", .reader = EMBER__OPT_SERVER,
	 .kind = EMBER__OPT_CUSTOM, .flags = EMPTY | EMBER__OPTF_FOREIGN,
	 .parse = ember__pyro_parse_java_interval, .max = 3600000,
	 .expect = "expected a duration such as 10s (" JAVA_NOTE ")", .store = EMBER__STORE_UINT,
	 IN_PYRO(timeout_ms), .fallback_of = "EMBERPROF_SERVER_TIMEOUT", .values = "DURATION"},
	{.name = "EMBERPROF_SERVER_QUEUE_LEN", .reader = EMBER__OPT_SERVER, .kind = EMBER__OPT_UINT,
	 .flags = EMPTY, .min = 1, .max = 4096, .expect = "expected a number of windows, 1..4096",
	 .store = EMBER__STORE_UINT, IN_PYRO(queue_len), .values = "N", .deflt = "16"},
	{.name = "PYROSCOPE_PUSH_QUEUE_CAPACITY", .reader = EMBER__OPT_SERVER,
	 .kind = EMBER__OPT_UINT, .flags = EMPTY | EMBER__OPTF_FOREIGN, .min = 1, .max = 4096,
	 .expect = "expected a number of windows, 1..4096", .store = EMBER__STORE_UINT,
	 IN_PYRO(queue_len), .fallback_of = "EMBERPROF_SERVER_QUEUE_LEN", .values = "N"},
	{.name = "EMBERPROF_SERVER_SPOOL_DIR", .reader = EMBER__OPT_SERVER, .flags = EMPTY,
	 .apply = ember__pyro_apply_spool_dir, IN_PYRO(spool_dir), .values = "DIR"},
	{.name = "EMBERPROF_SERVER_SPOOL_MAX", .reader = EMBER__OPT_SERVER,
	 .kind = EMBER__OPT_CUSTOM, .flags = EMPTY, .parse = ember__pyro_parse_size,
	 .min = 65536, .max = UINT64_MAX,
	 .expect = "expected a size such as 64M or 1G (at least 64K)", .store = EMBER__STORE_U64,
	 IN_PYRO(spool_max_bytes), .values = "SIZE", .deflt = "64M"},
	{.name = "EMBERPROF_SERVER_UPLOAD_JITTER", .reader = EMBER__OPT_SERVER,
	 .kind = EMBER__OPT_DURATION, .flags = EMPTY, .min = 0, .max = 3600000,
	 .expect = "expected a duration such as 2s or 0 (at most 1h)", .store = EMBER__STORE_UINT,
	 IN_PYRO(upload_jitter_ms), .values = "DURATION", .deflt = "0"},
	{.name = "EMBERPROF_SERVER_FLUSH_TIMEOUT", .reader = EMBER__OPT_SERVER,
	 .kind = EMBER__OPT_DURATION, .flags = EMPTY, .min = 1, .max = 600000,
	 .expect = "expected a duration such as 5s (at most 10m)", .store = EMBER__STORE_UINT,
	 IN_PYRO(flush_timeout_ms), .values = "DURATION", .deflt = "5s"},
	{.name = "EMBERPROF_SERVER_USER_AGENT", .reader = EMBER__OPT_SERVER, .flags = EMPTY,
	 .store = EMBER__STORE_STR, IN_PYRO(user_agent_suffix), .values = "TEXT"},
	{.name = "EMBERPROF_SERVER_MAX_AGE", .reader = EMBER__OPT_SERVER, .kind = EMBER__OPT_CUSTOM,
	 .flags = EMPTY, .parse = p_max_age,
	 .expect = "expected the server's validation.reject-older-than as a duration of at "
		   "least 1m, such as 1h, or 0 for no limit",
	 .store = EMBER__STORE_UINT, IN_PYRO(max_age_s), .values = "DURATION", .deflt = "1h"},

	/* ---- read by other parts ---- */
	{.name = "EMBERPROF_AUTOSTART", .reader = EMBER__OPT_ELSEWHERE, .kind = EMBER__OPT_BOOL,
	 .expect = BOOL_EXPECT, .values = "0|1", .deflt = "0", .where = "src/preload/preload.c"},
	{.name = "EMBERPROF_PROFILE_PID", .reader = EMBER__OPT_ELSEWHERE,
	 .flags = EMBER__OPTF_INTERNAL, .values = "PID", .where = "src/preload/preload.c"},
	{.name = "EMBERPROF_RUN_PID", .reader = EMBER__OPT_ELSEWHERE,
	 .flags = EMBER__OPTF_INTERNAL, .values = "PID", .where = "src/preload/preload.c"},
	/* `emberprof attach --wall`: its own pid, so that the agent it injects
	 * stops by itself if emberprof is killed (src/preload/attach_watch.h) */
	{.name = "EMBERPROF_ATTACHER_PID", .reader = EMBER__OPT_ELSEWHERE,
	 .flags = EMBER__OPTF_INTERNAL, .values = "PID", .where = "src/preload/attach_watch.c"},
	{.name = "EMBERPROF_DEBUGINFOD_TIMEOUT", .reader = EMBER__OPT_ELSEWHERE, .values = "SECONDS",
	 .deflt = "30", .where = "tools/symbolize/, emberprof's own debuginfod pass"},
	{.name = "EMBERPROF_DEBUGINFOD_WAIT", .reader = EMBER__OPT_ELSEWHERE, .values = "MS",
	 .deflt = "2000", .where = "cli/run_names.c, the tree engine's windows"},
	{.name = "EMBERPROF_LIB", .reader = EMBER__OPT_ELSEWHERE, .values = "PATH",
	 .where = "cli/program.c"},
};
const size_t ember__noptions = sizeof(ember__options) / sizeof(ember__options[0]);

/* ---- the reader ---- */

const ember__option *ember__opt_find(const char *name)
{
	for (size_t i = 0; i < ember__noptions; i++)
		if (!strcmp(ember__options[i].name, name))
			return &ember__options[i];
	return NULL;
}

const char *ember__opt_getenv(const ember__option *o)
{
	const char *v = o ? ember__getenv(o->name) : NULL;
	if (v && !*v && (o->flags & EMBER__OPTF_EMPTY_UNSET))
		return NULL;
	return v;
}

int ember__opt_is_set(const char *name)
{
	const char *v = ember__getenv(name);
	return v && *v;
}

int ember__opt_bad(const char *name, const char *value, int secret, const char *why)
{
	char shown[256];
	const ember__option *o = ember__opt_find(name);
	if (secret || (o && (o->flags & EMBER__OPTF_SECRET)))
		return ember__error(EMBER_ERR_INVALID, "environment variable %s=" EMBER_REDACTED
				    " is invalid: %s", name, why);
	return ember__error(EMBER_ERR_INVALID, "environment variable %s=\"%.200s\" is invalid: %s",
			    name, ember__redact_value(name, value, shown, sizeof(shown)), why);
}

int ember__opt_bad_last(const char *name, const char *value, int secret)
{
	char why[EMBER_ERROR_MAX];
	snprintf(why, sizeof(why), "%s", ember_last_error());
	return ember__opt_bad(name, value, secret, why);
}

/* The row's kind applied to v: 0 or nonzero. */
static int parse(const ember__option *o, const char *v, ember__opt_value *x)
{
	unsigned long n;
	unsigned ms;
	memset(x, 0, sizeof(*x));
	switch (o->kind) {
	case EMBER__OPT_TEXT:
		x->s = v;
		return 0;
	case EMBER__OPT_UINT:
		if (ember__parse_uint(v, (unsigned long)o->min, (unsigned long)o->max, &n))
			return -1;
		x->u = n;
		return 0;
	case EMBER__OPT_DURATION:
		if (o->min == 0 && (!strcmp(v, "0") || !strcmp(v, "0ms")))
			return 0;
		if (ember__parse_duration_ms(v, &ms) || ms < o->min || ms > o->max)
			return -1;
		x->u = ms;
		return 0;
	case EMBER__OPT_BOOL:
		return ember__parse_bool(v, &x->i);
	case EMBER__OPT_CHOICE:
		for (const ember__opt_choice *c = o->choices; c && c->name; c++)
			if (!strcmp(v, c->name)) {
				x->i = c->value;
				return 0;
			}
		return -1;
	case EMBER__OPT_CUSTOM:
		if (o->parse(v, x))
			return -1;
		return o->max && (x->u < o->min || x->u > o->max) ? -1 : 0;
	}
	return -1;
}

int ember__opt_read(const ember__option *o, const char **value, ember__opt_value *x)
{
	const char *v = ember__opt_getenv(o);
	*value = v;
	if (!v)
		return 0;
	if (parse(o, v, x))
		return ember__opt_bad(o->name, v, 0, o->expect);
	return 1;
}

int ember__opt_read2(const ember__option *ours, const ember__option *theirs,
		     const ember__option **which, const char **value, ember__opt_value *x)
{
	*which = ours;
	if (ours && ember__opt_is_set(ours->name))
		return ember__opt_read(ours, value, x);
	if (theirs && ember__opt_is_set(theirs->name)) {
		*which = theirs;
		return ember__opt_read(theirs, value, x);
	}
	*value = NULL;
	return 0;
}

static void store(const ember__option *o, void *target, const char *v, ember__opt_value x)
{
	char *at = (char *)target + o->offset;
	switch (o->store) {
	case EMBER__STORE_UINT:
		*(unsigned *)(void *)at = (unsigned)x.u;
		break;
	case EMBER__STORE_INT:
		*(int *)(void *)at = x.i;
		break;
	case EMBER__STORE_U64:
		*(uint64_t *)(void *)at = x.u;
		break;
	case EMBER__STORE_STR:
		*(const char **)(void *)at = v;
		break;
	case EMBER__STORE_NONE:
		break;
	}
}

int ember__options_apply(ember__opt_ctx *c, ember__opt_reader reader)
{
	for (size_t i = 0; i < ember__noptions; i++) {
		const ember__option *o = &ember__options[i];
		if (o->reader != reader || (o->flags & EMBER__OPTF_BY_CODE))
			continue;
		if (o->fallback_of && ember__opt_is_set(o->fallback_of))
			continue; /* emberprof's own name wins */
		const char *v;
		ember__opt_value x;
		int rc = ember__opt_read(o, &v, &x);
		if (rc <= 0) {
			if (rc < 0)
				return rc;
			continue;
		}
		if (o->apply && (rc = o->apply(c, o, v, x)) != 0)
			return rc;
		if (!o->apply)
			store(o, c->target, v, x);
	}
	return 0;
}
