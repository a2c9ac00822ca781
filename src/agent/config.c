/*
 * config.c - the builder: defaults, validated setters, the EMBERPROF_*
 * environment variables (their parsers: src/util/parse.c). Every
 * rejection names the setting and the bad value.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_internal.h"
#include "asprof/asprof_config.h"
#include "report/otlp.h"
#include "report/pyroscope.h"
#include "report/s3.h"
#include "symbols/symbolizer.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/redact.h"
#include "util/envsnap.h"

void ember__config_defaults(ember__config *c)
{
	memset(c, 0, sizeof(*c));
	c->hz = 100;
	c->interval_ms = 10000;
	c->max_depth = 128;
	c->unwind = EMBER_UNWIND_AUTO;
	c->engine = EMBER_ENGINE_AUTO;
	c->signo = SIGPROF;
	c->log_level = EMBER_LOG_WARN;
	c->poll_threshold_ms = 10;
}

void ember__config_release(ember__config *c, int destroy_reporters)
{
	free(c->app_name);
	for (size_t i = 0; i < c->ntags; i++) {
		free(c->tags[i].key);
		free(c->tags[i].value);
	}
	free(c->tags);
	for (size_t i = 0; i < c->nreporters; i++) {
		if (destroy_reporters && c->reporters[i].destroy)
			c->reporters[i].destroy(c->reporters[i].userdata);
		free((char *)c->reporters[i].name);
	}
	free(c->reporters);
	memset(c, 0, sizeof(*c));
}

/* ---- builder ---- */

EMBER_API int ember_builder_new(ember_builder **out, const char *app_name)
{
	*out = NULL;
	if (!app_name || !*app_name)
		return ember__error(EMBER_ERR_INVALID, "application name must be a non-empty string");
	ember_builder *b = calloc(1, sizeof(*b));
	if (!b)
		return ember__error_oom("builder");
	ember__config_defaults(&b->cfg);
	b->cfg.app_name = strdup(app_name);
	if (!b->cfg.app_name) {
		free(b);
		return ember__error_oom("application name");
	}
	*out = b;
	return 0;
}

EMBER_API void ember_builder_free(ember_builder *b)
{
	if (!b)
		return;
	ember__config_release(&b->cfg, 1);
	free(b);
}

EMBER_API int ember_builder_set_sample_rate(ember_builder *b, unsigned hz)
{
	if (hz < 1 || hz > 10000)
		return ember__error(EMBER_ERR_INVALID, "sample rate %u Hz is out of range 1..10000", hz);
	b->cfg.hz = hz;
	return 0;
}

EMBER_API int ember_builder_set_interval_ms(ember_builder *b, unsigned ms)
{
	if (ms < 100 || ms > 3600000)
		return ember__error(EMBER_ERR_INVALID,
				    "reporting interval %u ms is out of range 100 ms..1 h", ms);
	b->cfg.interval_ms = ms;
	return 0;
}

EMBER_API int ember_builder_set_max_depth(ember_builder *b, unsigned depth)
{
	if (depth < 1 || depth > 1024)
		return ember__error(EMBER_ERR_INVALID, "maximum stack depth %u is out of range 1..1024", depth);
	b->cfg.max_depth = depth;
	return 0;
}

EMBER_API int ember_builder_set_unwind(ember_builder *b, ember_unwind_mode mode)
{
	if (mode != EMBER_UNWIND_AUTO && mode != EMBER_UNWIND_FP && mode != EMBER_UNWIND_DWARF)
		return ember__error(EMBER_ERR_INVALID, "unknown unwind mode %d", (int)mode);
	b->cfg.unwind = mode;
	return 0;
}

EMBER_API int ember_builder_set_engine(ember_builder *b, ember_engine engine)
{
	if (engine < EMBER_ENGINE_AUTO || engine > EMBER_ENGINE_PERF)
		return ember__error(EMBER_ERR_INVALID, "unknown sampling engine %d", (int)engine);
	b->cfg.engine = engine;
	return 0;
}

EMBER_API int ember_builder_set_wall(ember_builder *b, unsigned interval_ms)
{
	if (interval_ms > 60000)
		return ember__error(EMBER_ERR_INVALID,
				    "wall-clock interval %u ms is out of range 1 ms..60 s (0: off)",
				    interval_ms);
	b->cfg.wall_ms = interval_ms;
	return 0;
}

EMBER_API int ember_builder_set_alloc(ember_builder *b, uint64_t mean_bytes)
{
	if (mean_bytes > EMBER__ALLOC_MAX_MEAN)
		return ember__error(EMBER_ERR_INVALID,
				    "allocation sampling mean %llu bytes is out of range 1..1 GiB (0: off)",
				    (unsigned long long)mean_bytes);
	b->cfg.alloc_mean = mean_bytes;
	return 0;
}

EMBER_API int ember_builder_set_alloc_backend(ember_builder *b, ember_alloc_backend backend)
{
	if (backend < EMBER_ALLOC_BACKEND_AUTO || backend > EMBER_ALLOC_BACKEND_JEMALLOC)
		return ember__error(EMBER_ERR_INVALID, "unknown allocation profiling backend %d",
				    (int)backend);
	b->cfg.alloc_backend = backend;
	return 0;
}

EMBER_API int ember_builder_set_poll_threshold(ember_builder *b, unsigned ms)
{
	if (ms > 3600000)
		return ember__error(EMBER_ERR_INVALID,
				    "long-poll threshold %u ms is out of range 0..3600000", ms);
	b->cfg.poll_threshold_ms = ms;
	return 0;
}

EMBER_API int ember_builder_set_signal(ember_builder *b, int signo)
{
	if (signo < 1 || signo > SIGRTMAX || signo == SIGKILL || signo == SIGSTOP ||
	    signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE)
		return ember__error(EMBER_ERR_INVALID, "signal %d cannot be used for sampling", signo);
	b->cfg.signo = signo;
	return 0;
}

static int valid_tag_key(const char *k)
{
	if (!k || !(isalpha((unsigned char)*k) || *k == '_'))
		return 0;
	for (const char *p = k + 1; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '.'))
			return 0;
	return strlen(k) <= 128;
}

EMBER_API int ember_builder_add_tag(ember_builder *b, const char *key, const char *value)
{
	if (!valid_tag_key(key))
		return ember__error(EMBER_ERR_INVALID,
				    "tag key \"%s\" is invalid: it must match [A-Za-z_][A-Za-z0-9_.]* "
				    "(at most 128 characters)",
				    key ? key : "(null)");
	if (!value || strlen(value) > 1024)
		return ember__error(EMBER_ERR_INVALID, "tag \"%s\" needs a value of at most 1024 bytes", key);
	for (size_t i = 0; i < b->cfg.ntags; i++)
		if (!strcmp(b->cfg.tags[i].key, key))
			return ember__error(EMBER_ERR_INVALID, "tag \"%s\" is given twice", key);
	ember__tag *t = realloc(b->cfg.tags, (b->cfg.ntags + 1) * sizeof(*t));
	if (!t)
		return ember__error_oom("tag");
	b->cfg.tags = t;
	char *k = strdup(key), *v = strdup(value);
	if (!k || !v) {
		free(k);
		free(v);
		return ember__error_oom("tag");
	}
	t[b->cfg.ntags].key = k;
	t[b->cfg.ntags].value = v;
	b->cfg.ntags++;
	return 0;
}

EMBER_API int ember_builder_set_line_info(ember_builder *b, ember_line_info mode)
{
	if (mode < EMBER_LINES_APP || mode > EMBER_LINES_NONE)
		return ember__error(EMBER_ERR_INVALID, "unknown line information mode %d", (int)mode);
	b->cfg.lines = mode;
	return 0;
}

EMBER_API int ember_builder_set_thread_labels(ember_builder *b, int on)
{
	b->cfg.thread_labels = on != 0;
	return 0;
}

EMBER_API int ember_builder_add_reporter(ember_builder *b, const ember_reporter *r)
{
	if (!r || !r->report)
		return ember__error(EMBER_ERR_INVALID, "a reporter needs a report callback");
	ember_reporter *t = realloc(b->cfg.reporters, (b->cfg.nreporters + 1) * sizeof(*t));
	if (!t)
		return ember__error_oom("reporter");
	b->cfg.reporters = t;
	char *name = strdup(r->name ? r->name : "reporter");
	if (!name)
		return ember__error_oom("reporter name");
	t[b->cfg.nreporters] = *r;
	t[b->cfg.nreporters].name = name;
	b->cfg.nreporters++;
	return 0;
}

EMBER_API int ember_builder_set_log(ember_builder *b, ember_log_fn fn, void *userdata,
				    ember_log_level level)
{
	if (level < EMBER_LOG_OFF || level > EMBER_LOG_DEBUG)
		return ember__error(EMBER_ERR_INVALID, "unknown log level %d", (int)level);
	b->cfg.log_fn = fn;
	b->cfg.log_ud = userdata;
	b->cfg.log_level = level;
	return 0;
}

EMBER_API int ember_builder_follow_forks(ember_builder *b, ember_fork_fn fn, void *userdata)
{
	if (fn && !ember__follow_forks_available())
		return ember__error(EMBER_ERR_UNSUPPORTED, "following fork children needs the shared "
				    "library libemberprof.so");
	b->cfg.fork_fn = fn;
	b->cfg.fork_ud = fn ? userdata : NULL;
	return 0;
}

int ember__builder_from_settings(ember_builder **out, const ember__config *src)
{
	*out = NULL;
	ember_builder *b = calloc(1, sizeof(*b));
	if (!b)
		return ember__error_oom("builder");
	b->cfg = *src; /* the scalars; what the config owns is copied below */
	b->cfg.app_name = NULL;
	b->cfg.tags = NULL;
	b->cfg.ntags = 0;
	b->cfg.reporters = NULL;
	b->cfg.nreporters = 0;
	b->cfg.app_name = strdup(src->app_name);
	if (!b->cfg.app_name)
		goto oom;
	if (src->ntags) {
		b->cfg.tags = calloc(src->ntags, sizeof(*b->cfg.tags));
		if (!b->cfg.tags)
			goto oom;
		for (size_t i = 0; i < src->ntags; i++) {
			ember__tag *t = &b->cfg.tags[b->cfg.ntags];
			t->key = strdup(src->tags[i].key);
			t->value = strdup(src->tags[i].value);
			b->cfg.ntags++; /* (released with the rest on failure) */
			if (!t->key || !t->value)
				goto oom;
		}
	}
	*out = b;
	return 0;
oom:
	ember_builder_free(b);
	return ember__error_oom("a fork child's settings");
}

/* ---- environment ---- */

static int bad_env(const char *name, const char *value, const char *expect)
{
	char shown[512];
	return ember__error(EMBER_ERR_INVALID, "environment variable %s=\"%s\" is invalid: %s", name,
			    ember__redact_value(name, value, shown, sizeof(shown)), expect);
}

/* Adds k=v[,k=v...] tags. */
static int apply_tags(ember_builder *b, const char *name, const char *list)
{
	char *copy = strdup(list), *save = NULL;
	if (!copy)
		return ember__error_oom("tags");
	int rc = 0;
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		while (*item == ' ')
			item++;
		char *eq = strchr(item, '=');
		if (!eq || eq == item) {
			rc = bad_env(name, list, "expected key=value[,key=value...]");
			break;
		}
		*eq = '\0';
		rc = ember_builder_add_tag(b, item, eq + 1);
		if (rc) {
			char why[EMBER_ERROR_MAX];
			strncpy(why, ember_last_error(), sizeof(why) - 1);
			why[sizeof(why) - 1] = '\0';
			rc = bad_env(name, list, why);
			break;
		}
	}
	free(copy);
	return rc;
}

/*
 * The Pyroscope reporter's variables: EMBERPROF_SERVER_URL and the other
 * EMBERPROF_SERVER_*, and the names Pyroscope's own agents read
 * (src/agent/env_pyroscope.c). Applied last, so that the EMBERPROF_*
 * settings above win over their PYROSCOPE_* equivalents.
 */
static int apply_server_env(ember_builder *b)
{
	return ember__pyroscope_apply_env(b);
}

EMBER_API int ember_builder_apply_env(ember_builder *b)
{
	const char *v;
	unsigned long n;
	int x;
	if ((v = ember__getenv("EMBERPROF_APP_NAME")) && *v) {
		char *s = strdup(v);
		if (!s)
			return ember__error_oom("application name");
		free(b->cfg.app_name);
		b->cfg.app_name = s;
	}
	if ((v = ember__getenv("EMBERPROF_SAMPLE_RATE"))) {
		if (ember__parse_uint(v, 1, 10000, &n))
			return bad_env("EMBERPROF_SAMPLE_RATE", v, "expected a rate in Hz, 1..10000");
		b->cfg.hz = (unsigned)n;
	}
	if ((v = ember__getenv("EMBERPROF_INTERVAL"))) {
		unsigned ms;
		if (ember__parse_duration_ms(v, &ms) || ms < 100 || ms > 3600000)
			return bad_env("EMBERPROF_INTERVAL", v,
				       "expected a duration such as 10s, 500ms or 1m (100ms..1h)");
		b->cfg.interval_ms = ms;
	}
	if ((v = ember__getenv("EMBERPROF_MAX_DEPTH"))) {
		if (ember__parse_uint(v, 1, 1024, &n))
			return bad_env("EMBERPROF_MAX_DEPTH", v, "expected a depth, 1..1024");
		b->cfg.max_depth = (unsigned)n;
	}
	if ((v = ember__getenv("EMBERPROF_UNWIND"))) {
		if (!strcmp(v, "auto"))
			b->cfg.unwind = EMBER_UNWIND_AUTO;
		else if (!strcmp(v, "fp"))
			b->cfg.unwind = EMBER_UNWIND_FP;
		else if (!strcmp(v, "dwarf"))
			b->cfg.unwind = EMBER_UNWIND_DWARF;
		else
			return bad_env("EMBERPROF_UNWIND", v, "expected auto, fp or dwarf");
	}
	if ((v = ember__getenv("EMBERPROF_ENGINE"))) {
		if (!strcmp(v, "auto"))
			b->cfg.engine = EMBER_ENGINE_AUTO;
		else if (!strcmp(v, "timer") || !strcmp(v, "thread-timer"))
			b->cfg.engine = EMBER_ENGINE_THREAD_TIMER;
		else if (!strcmp(v, "itimer") || !strcmp(v, "process-timer"))
			b->cfg.engine = EMBER_ENGINE_PROCESS_TIMER;
		else if (!strcmp(v, "perf"))
			b->cfg.engine = EMBER_ENGINE_PERF;
		else
			return bad_env("EMBERPROF_ENGINE", v, "expected auto, perf, timer or itimer");
	}
	if ((v = ember__getenv("EMBERPROF_WALL"))) {
		unsigned ms;
		if (ember__parse_wall(v, &ms))
			return bad_env("EMBERPROF_WALL", v,
				       "expected off, on (50ms) or an interval such as 50ms or 0.2s "
				       "(1ms..60s)");
		b->cfg.wall_ms = ms;
	}
	/* Allocation profiling (src/heap/): EMBERPROF_ALLOC turns it on (with a
	 * mean, optionally); EMBERPROF_ALLOC_SAMPLE_BYTES sets the mean. */
	uint64_t mean = 0;
	if ((v = ember__getenv("EMBERPROF_ALLOC_SAMPLE_BYTES"))) {
		if (ember__parse_bytes(v, &mean))
			return bad_env("EMBERPROF_ALLOC_SAMPLE_BYTES", v,
				       "expected a byte count such as 524288, 512k or 1m (1..1g)");
		if (b->cfg.alloc_mean)
			b->cfg.alloc_mean = mean;
	}
	if ((v = ember__getenv("EMBERPROF_ALLOC"))) {
		uint64_t a;
		if (ember__parse_alloc(v, &a))
			return bad_env("EMBERPROF_ALLOC", v,
				       "expected off, on, or a sampling mean such as 512k or 1m (1..1g)");
		b->cfg.alloc_mean = a && mean ? mean : a;
	}
	/* The memory profile's source (src/heap/jemalloc.c for jemalloc). */
	if ((v = ember__getenv("EMBERPROF_ALLOC_BACKEND"))) {
		if (!strcmp(v, "auto"))
			b->cfg.alloc_backend = EMBER_ALLOC_BACKEND_AUTO;
		else if (!strcmp(v, "emberprof"))
			b->cfg.alloc_backend = EMBER_ALLOC_BACKEND_EMBERPROF;
		else if (!strcmp(v, "jemalloc"))
			b->cfg.alloc_backend = EMBER_ALLOC_BACKEND_JEMALLOC;
		else
			return bad_env("EMBERPROF_ALLOC_BACKEND", v,
				       "expected auto, emberprof or jemalloc");
	}
	if ((v = ember__getenv("EMBERPROF_POLLCATCH_THRESHOLD"))) {
		unsigned ms;
		if (!strcmp(v, "0") || !strcmp(v, "0ms"))
			ms = 0;
		else if (ember__parse_duration_ms(v, &ms) || ms > 3600000)
			return bad_env("EMBERPROF_POLLCATCH_THRESHOLD", v,
				       "expected a duration such as 10ms or 0.5s (0..1h)");
		b->cfg.poll_threshold_ms = ms;
	}
	/* Test knob, not a user setting: makes the perf_events engine act as
	 * if the kernel refused it, to exercise the fallback. */
	if ((v = ember__getenv("EMBERPROF_ENGINE_PERF_DISABLE"))) {
		if (ember__parse_bool(v, &x))
			return bad_env("EMBERPROF_ENGINE_PERF_DISABLE", v, "expected 0 or 1");
		b->cfg.perf_refuse = x;
	}
	if ((v = ember__getenv("EMBERPROF_SIGNAL"))) {
		if (ember__parse_signal(v, &x) || ember_builder_set_signal(b, x))
			return bad_env("EMBERPROF_SIGNAL", v,
				       "expected a signal name or number such as SIGPROF or SIGRTMIN+4");
	}
	if ((v = ember__getenv("EMBERPROF_LINES"))) {
		if (!strcmp(v, "app"))
			b->cfg.lines = EMBER_LINES_APP;
		else if (!strcmp(v, "all"))
			b->cfg.lines = EMBER_LINES_ALL;
		else if (!strcmp(v, "none"))
			b->cfg.lines = EMBER_LINES_NONE;
		else
			return bad_env("EMBERPROF_LINES", v, "expected app, all or none");
	}
	if ((v = ember__getenv("EMBERPROF_THREAD_LABELS"))) {
		if (ember__parse_bool(v, &x))
			return bad_env("EMBERPROF_THREAD_LABELS", v, "expected 0 or 1");
		b->cfg.thread_labels = x;
	}
	if ((v = ember__getenv("EMBERPROF_LOG_LEVEL"))) {
		if (ember__parse_log_level(v, &x))
			return bad_env("EMBERPROF_LOG_LEVEL", v, "expected off, error, warn, info or debug");
		b->cfg.log_level = x;
	}
	if ((v = ember__getenv("EMBERPROF_TAGS")) && *v) {
		int rc = apply_tags(b, "EMBERPROF_TAGS", v);
		if (rc)
			return rc;
	}
	if ((v = ember__getenv("EMBERPROF_FOLLOW_CHILDREN"))) {
		if (ember__parse_bool(v, &x))
			return bad_env("EMBERPROF_FOLLOW_CHILDREN", v, "expected 0 or 1");
	}
	/* The backend first: it decides the format of the reporters below. */
	int arc = ember__asprof_apply_env(b);
	if (arc)
		return arc;
	int asprof = b->cfg.backend == EMBER_BACKEND_ASYNC_PROFILER;
	unsigned formats = asprof ? EMBER_FORMAT_JFR : EMBER_FORMAT_PPROF;
	if ((v = ember__getenv("EMBERPROF_OUTPUT_FORMAT")) && *v && ember__parse_formats(v, &formats))
		return bad_env("EMBERPROF_OUTPUT_FORMAT", v, "expected pprof, jfr or both");
	if (asprof && formats != EMBER_FORMAT_JFR)
		return bad_env("EMBERPROF_OUTPUT_FORMAT", v, "the async-profiler backend "
			       "(EMBERPROF_BACKEND=asprof) writes jfr only");
	if ((v = ember__getenv("EMBERPROF_OUTPUT_DIR")) && *v) {
		ember_reporter r;
		int rc = ember_reporter_local_ex(&r, v, formats);
		if (rc == 0) {
			rc = ember_builder_add_reporter(b, &r);
			if (rc && r.destroy)
				r.destroy(r.userdata);
		}
		if (rc) {
			char why[EMBER_ERROR_MAX];
			strncpy(why, ember_last_error(), sizeof(why) - 1);
			why[sizeof(why) - 1] = '\0';
			return bad_env("EMBERPROF_OUTPUT_DIR", v, why);
		}
	}
	/* The S3 reporter's EMBERPROF_S3_* (src/agent/env_s3.c). */
	int src = ember__s3_apply_env(b);
	if (!src) /* the OTLP reporter's OTEL_* (src/report/otlp_env.c) */
		src = ember__otlp_apply_env(b);
	if (src)
		return src;
	return apply_server_env(b);
}

int ember__config_lines_policy(const ember__config *cfg)
{
	return cfg->lines == EMBER_LINES_ALL	? EMBER__LINES_ALL
	       : cfg->lines == EMBER_LINES_NONE ? EMBER__LINES_NONE
						: EMBER__LINES_APP;
}
