/* SPDX-License-Identifier: Apache-2.0 */
/*
 * asprof.c - loading libasyncProfiler.so and talking to it through its C
 * API (asprof.h upstream): asprof_init, asprof_execute, asprof_error_str
 * (required), asprof_get_thread_local_data, asprof_register_jfr_event,
 * asprof_emit_jfr_event (optional, for the pollcatch helpers).
 *
 * Loaded libraries are kept in a small table for the process's life and
 * never dlclose'd, as async-profiler's own agent does: the profiler leaves
 * signal handlers and threads behind. The table (under a mutex) and the
 * pointer to the current library (an atomic, read without the mutex by the
 * hooks of asprof_hooks.h on application threads, which have no agent
 * pointer) are this file's only globals.
 */
#include "asprof/asprof.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asprof/asprof_hooks.h"
#include "emberprof.h"
#include "util/error.h"
#include "util/forkguard.h"
#include "util/parse.h"

/* upstream: typedef struct { volatile uint64_t sample_counter; } asprof_thread_local_data; */
typedef struct asprof_tld {
	volatile uint64_t sample_counter;
} asprof_tld;

typedef void (*asprof_writer_fn)(const char *buf, size_t size);

struct ember__asprof_api {
	void *handle;
	char path[EMBER__ASPROF_LIBRARY_MAX + 1];
	void (*init)(void);
	const char *(*execute)(const char *cmd, asprof_writer_fn out);
	const char *(*error_str)(const char *err);
	asprof_tld *(*get_tld)(void);
	int (*register_event)(const char *name);
	const char *(*emit_event)(int key, const uint8_t *data, size_t len);
	_Atomic int inited;
};

#define MAX_LIBS 4
static ember__asprof_api libs[MAX_LIBS];
static size_t nlibs;
static pthread_mutex_t libs_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(const ember__asprof_api *) current;

/* ---- loading ---- */

int ember__asprof_check_library(const char *path)
{
	if (!path || path[0] != '/')
		return ember__error(EMBER_ERR_INVALID, "async-profiler library path \"%s\" must be "
				    "absolute (a bare name is looked up through the loader's path, never "
				    "the current directory)", path ? path : "(null)");
	if (strlen(path) > EMBER__ASPROF_LIBRARY_MAX)
		return ember__error(EMBER_ERR_INVALID, "async-profiler library path is longer than %d "
				    "bytes", EMBER__ASPROF_LIBRARY_MAX);
	return 0;
}

int ember__asprof_load(const char *library, const ember__asprof_api **out)
{
	*out = NULL;
	int given = library && *library;
	const char *name = given ? library : EMBER__ASPROF_LIBNAME;
	int rc;
	if (given && (rc = ember__asprof_check_library(name)))
		return rc;
	pthread_mutex_lock(&libs_mu);
	for (size_t i = 0; i < nlibs; i++)
		if (!strcmp(libs[i].path, name)) {
			*out = &libs[i];
			atomic_store(&current, &libs[i]);
			pthread_mutex_unlock(&libs_mu);
			return 0;
		}
	rc = 0;
	dlerror();
	ember__forkguard_enter(); /* its initialization (forkguard.h) */
	void *h = dlopen(name, RTLD_LOCAL | RTLD_LAZY);
	ember__forkguard_leave();
	if (!h) {
		const char *why = dlerror();
		rc = ember__error(EMBER_ERR_UNSUPPORTED, "cannot load async-profiler: %s (give its "
				  "absolute path in EMBERPROF_ASPROF_LIB, or put its directory in "
				  "LD_LIBRARY_PATH)", why ? why : name);
		goto out;
	}
	ember__asprof_api a;
	memset(&a, 0, sizeof(a));
	a.handle = h;
	snprintf(a.path, sizeof(a.path), "%s", name);
	static const char *const required[] = {"asprof_init", "asprof_execute", "asprof_error_str"};
	void *sym[3];
	for (int i = 0; i < 3; i++) {
		if (!(sym[i] = dlsym(h, required[i]))) {
			rc = ember__error(EMBER_ERR_UNSUPPORTED, "%s is not async-profiler's library or "
					  "too old: it has no %s (async-profiler 2.9 or later has the C "
					  "API)", name, required[i]);
			dlclose(h);
			goto out;
		}
	}
	/* dlsym returns void *; POSIX guarantees the conversion to function pointers. */
	memcpy(&a.init, &sym[0], sizeof(a.init));
	memcpy(&a.execute, &sym[1], sizeof(a.execute));
	memcpy(&a.error_str, &sym[2], sizeof(a.error_str));
	void *p;
	if ((p = dlsym(h, "asprof_get_thread_local_data")))
		memcpy(&a.get_tld, &p, sizeof(a.get_tld));
	if ((p = dlsym(h, "asprof_register_jfr_event")))
		memcpy(&a.register_event, &p, sizeof(a.register_event));
	if ((p = dlsym(h, "asprof_emit_jfr_event")))
		memcpy(&a.emit_event, &p, sizeof(a.emit_event));
	/* The same library by another name: keep the first entry. */
	for (size_t i = 0; i < nlibs; i++)
		if (libs[i].handle == h) {
			*out = &libs[i];
			goto publish;
		}
	if (nlibs == MAX_LIBS) {
		rc = ember__error(EMBER_ERR_BUSY, "already %d async-profiler libraries loaded; cannot "
				  "load %s too", MAX_LIBS, name);
		goto out; /* h stays loaded: harmless, and it may be in use by its own LD_PRELOAD */
	}
	libs[nlibs] = a;
	*out = &libs[nlibs++];
publish:
	atomic_store(&current, *out);
out:
	pthread_mutex_unlock(&libs_mu);
	return rc;
}

void ember__asprof_init_once(const ember__asprof_api *api)
{
	ember__asprof_api *a = (ember__asprof_api *)api;
	int expect = 0;
	if (atomic_compare_exchange_strong(&a->inited, &expect, 1))
		a->init();
}

const char *ember__asprof_api_path(const ember__asprof_api *api)
{
	return api->path;
}

/* ---- commands ---- */

static __thread char last_output[256];
static __thread size_t last_output_len;

/* asprof_execute's output sink: keeps the start of the text for the log. */
static void keep_output(const char *buf, size_t size)
{
	size_t room = sizeof(last_output) - 1 - last_output_len;
	if (size > room)
		size = room;
	memcpy(last_output + last_output_len, buf, size);
	last_output_len += size;
	last_output[last_output_len] = '\0';
}

const char *ember__asprof_last_output(void)
{
	return last_output;
}

int ember__asprof_exec(const ember__asprof_api *api, const char *cmd)
{
	last_output_len = 0;
	last_output[0] = '\0';
	const char *err = api->execute(cmd, keep_output);
	if (!err)
		return 0;
	const char *msg = api->error_str(err);
	if (!msg)
		return 0;
	/* Only the verb: the start command names our descriptor, no secret,
	 * but the message stays short. */
	size_t verb = strcspn(cmd, ",");
	return ember__error(EMBER_ERR_SYS, "async-profiler refused \"%.*s\": %s", (int)verb, cmd, msg);
}

int ember__asprof_start_command(char *buf, size_t cap, const ember__asprof_config *cfg, int fd)
{
	uint64_t ns = cfg->cpu_interval_ns ? cfg->cpu_interval_ns : EMBER__ASPROF_DEFAULT_CPU_NS;
	unsigned ms = cfg->wall_interval_ms ? cfg->wall_interval_ms : EMBER__ASPROF_DEFAULT_WALL_MS;
	char depth[32] = "";
	if (cfg->max_depth) /* async-profiler keeps the leaf side too (jstackdepth) */
		snprintf(depth, sizeof(depth), ",jstackdepth=%u", cfg->max_depth);
	int n = snprintf(buf, cap,
			 "start,event=cpu,interval=%" PRIu64 ",wall=%ums,jfr,cstack=dwarf,"
			 "file=/proc/self/fd/%d%s%s%s",
			 ns, ms, fd, cfg->native_mem[0] ? ",nativemem=" : "", cfg->native_mem, depth);
	if (n < 0 || (size_t)n >= cap)
		return ember__error(EMBER_ERR_INVALID, "async-profiler start command too long");
	return 0;
}

int ember__asprof_check_native_mem(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	int ok = n >= 1 && n <= EMBER__ASPROF_NATIVEMEM_MAX;
	for (size_t i = 0; ok && i < n; i++)
		ok = isalnum((unsigned char)s[i]) || s[i] == '.';
	if (!ok)
		return ember__error(EMBER_ERR_INVALID, "native memory setting \"%.64s\" is invalid: "
				    "expected a byte count such as 4096 or 10m (1..%d characters among "
				    "letters, digits and '.')", s ? s : "(null)", EMBER__ASPROF_NATIVEMEM_MAX);
	return 0;
}

int ember__asprof_parse_ns(const char *s, uint64_t *out)
{
	unsigned long long v;
	const char *end;
	if (ember__parse_number(s, &v, &end))
		return EMBER_ERR_INVALID;
	uint64_t mul;
	if (!*end || !strcmp(end, "ns"))
		mul = 1;
	else if (!strcmp(end, "us"))
		mul = 1000;
	else if (!strcmp(end, "ms"))
		mul = 1000000;
	else if (!strcmp(end, "s"))
		mul = 1000000000;
	else
		return EMBER_ERR_INVALID;
	if (v > UINT64_MAX / mul)
		return EMBER_ERR_INVALID;
	*out = (uint64_t)v * mul;
	return 0;
}

/* ---- hooks for code without an agent (asprof_hooks.h) ---- */

int ember__asprof_attach(const char *library)
{
	const ember__asprof_api *a;
	int rc = ember__asprof_load(library, &a);
	if (rc == 0)
		ember__asprof_init_once(a);
	return rc;
}

unsigned ember__asprof_features(void)
{
	const ember__asprof_api *a = atomic_load(&current);
	if (!a)
		return 0;
	return EMBER__ASPROF_HAS_LIB | (a->get_tld ? EMBER__ASPROF_HAS_THREAD_DATA : 0) |
	       (a->register_event && a->emit_event ? EMBER__ASPROF_HAS_USER_EVENTS : 0);
}

const volatile uint64_t *ember__asprof_thread_sample_counter_ptr(void)
{
	const ember__asprof_api *a = atomic_load(&current);
	if (!a || !a->get_tld)
		return NULL;
	asprof_tld *t = a->get_tld();
	return t ? &t->sample_counter : NULL;
}

uint64_t ember__asprof_thread_sample_counter(void)
{
	const volatile uint64_t *p = ember__asprof_thread_sample_counter_ptr();
	return p ? *p : 0;
}

int ember__asprof_register_event(const char *name)
{
	const ember__asprof_api *a = atomic_load(&current);
	if (!a || !a->register_event || !a->emit_event)
		return ember__error(EMBER_ERR_UNSUPPORTED, "%s has no user JFR events "
				    "(asprof_register_jfr_event/asprof_emit_jfr_event)",
				    a ? a->path : "no async-profiler library is loaded; it");
	if (!name || !*name)
		return ember__error(EMBER_ERR_INVALID, "a user JFR event needs a name");
	int key = a->register_event(name);
	if (key < 0)
		return ember__error(EMBER_ERR_SYS, "async-profiler could not register the JFR event "
				    "\"%s\"", name);
	return key;
}

int ember__asprof_emit(int key, const uint8_t *data, size_t len)
{
	const ember__asprof_api *a = atomic_load(&current);
	if (!a || !a->emit_event)
		return ember__error(EMBER_ERR_UNSUPPORTED, "no async-profiler library with "
				    "asprof_emit_jfr_event is loaded");
	if (len > EMBER__ASPROF_MAX_EVENT_LEN || (len && !data))
		return ember__error(EMBER_ERR_INVALID, "user JFR event of %zu bytes: at most %d", len,
				    EMBER__ASPROF_MAX_EVENT_LEN);
	const char *err = a->emit_event(key, data, len);
	const char *msg = err ? a->error_str(err) : NULL;
	if (msg)
		return ember__error(EMBER_ERR_SYS, "async-profiler could not emit a JFR event: %s", msg);
	return 0;
}
