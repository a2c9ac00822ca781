/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - the builder: defaults, validated setters, and
 * ember_builder_apply_env, driven by the table of variables (options.c).
 * Every rejection names the setting and the bad value.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_internal.h"
#include "agent/options.h"
#include "asprof/asprof_config.h"
#include "report/otlp.h"
#include "report/pyroscope.h"
#include "report/s3.h"
#include "symbols/symbolizer.h"
#include "util/error.h"
#include "util/parse.h"

void ember__config_defaults(ember__config *c)
{
	memset(c, 0, sizeof(*c));
	c->hz = 100;
	c->interval_ms = 10000;
	c->max_depth = 128;
	c->unwind = EMBER_UNWIND_AUTO;
	c->engine = EMBER_ENGINE_AUTO;
	c->signo = SIGPROF;
	c->log.level = EMBER_LOG_WARN;
	c->poll_threshold_ms = 10;
	c->kernel = 1;
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

EMBER_API int ember_builder_set_kernel_frames(ember_builder *b, int on)
{
	b->cfg.kernel = on != 0;
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
	b->cfg.log.fn = fn;
	b->cfg.log.ud = userdata;
	b->cfg.log.level = level;
	return 0;
}

EMBER_API int ember_builder_set_backend(ember_builder *b, ember_backend backend)
{
	if (!b)
		return ember__error(EMBER_ERR_INVALID, "builder is NULL");
	if (backend != EMBER_BACKEND_BUILTIN && backend != EMBER_BACKEND_ASYNC_PROFILER)
		return ember__error(EMBER_ERR_INVALID, "unknown backend %d", (int)backend);
	b->cfg.backend = backend;
	return 0;
}

EMBER_API int ember_builder_set_asprof_options(ember_builder *b, const ember_asprof_options *in)
{
	if (!b || !in)
		return ember__error(EMBER_ERR_INVALID, "ember_builder_set_asprof_options: %s is NULL",
				    b ? "options" : "builder");
	return ember__asprof_options_to_config(in, &b->cfg.asprof);
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

/*
 * The variables are rows of one table (options.c), applied reader by
 * reader: the builder's own, the backend's (it decides the format of the
 * reporters), the output directory, then the S3 and Pyroscope reporters
 * (env_s3.c, env_pyroscope.c), last so that the EMBERPROF_* settings win
 * over their PYROSCOPE_* equivalents.
 */
EMBER_API int ember_builder_apply_env(ember_builder *b)
{
	ember__opt_ctx c = {.b = b, .target = &b->cfg};
	int rc = ember__options_apply(&c, EMBER__OPT_BUILDER);
	if (rc == 0)
		rc = ember__asprof_apply_env(&b->cfg.asprof, &b->cfg.backend);
	if (rc)
		return rc;
	c.formats = b->cfg.backend == EMBER_BACKEND_ASYNC_PROFILER ? EMBER_FORMAT_JFR
								     : EMBER_FORMAT_PPROF;
	if ((rc = ember__options_apply(&c, EMBER__OPT_OUTPUT)) || (rc = ember__s3_apply_env(b)))
		return rc;
	/* the OTLP reporter's OTEL_* variables (src/report/otlp_env.c) */
	if ((rc = ember__otlp_apply_env(b)))
		return rc;
	return ember__pyroscope_apply_env(b);
}

int ember__config_lines_policy(const ember__config *cfg)
{
	return cfg->lines == EMBER_LINES_ALL	? EMBER__LINES_ALL
	       : cfg->lines == EMBER_LINES_NONE ? EMBER__LINES_NONE
						: EMBER__LINES_APP;
}

unsigned ember__config_symbolizer_flags(const ember__config *cfg)
{
	/* the agent's symbolizer reads the dlclose journal (symbols/dlclosed.h) */
	return (cfg->no_symbolize ? EMBER__SYM_ADDRESSES_ONLY : 0u) | EMBER__SYM_DLCLOSED;
}

void ember__log(const ember__config *c, ember_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ember__vlogf(c ? &c->log : NULL, level, fmt, ap);
	va_end(ap);
}
