/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envsnap.c - the environment the configuration is read from (envsnap.h).
 */
#include "util/envsnap.h"
#include "util/hotpage.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

extern char **environ;

/* One block: the pointer array, then the strings. Never freed: fork
 * children inherit it. */
static char **g_snap EMBER_HOT_DATA;
static _Atomic int g_use EMBER_HOT_DATA;
/* This thread is emberprof's own (ember__env_own_thread). Initial-exec:
 * read by the getenv of every thread of the program (preload/getenv_hook.c). */
static __thread int t_own __attribute__((tls_model("initial-exec")));

EMBER_HOT_TEXT void ember__env_snapshot_take(void)
{
	if (g_snap)
		return;
	size_t n = 0, bytes = 0;
	for (char **e = environ; e && *e; e++, n++)
		bytes += strlen(*e) + 1;
	char **v = malloc((n + 1) * sizeof(*v) + bytes);
	if (!v)
		return; /* children then read their live environment */
	char *s = (char *)(v + n + 1);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(environ[i]) + 1;
		memcpy(s, environ[i], len);
		v[i] = s;
		s += len;
	}
	v[n] = NULL;
	g_snap = v;
}

int ember__env_snapshot_set(const char *settings)
{
	size_t n = 0, bytes = strlen(settings) + 1;
	for (const char *p = settings; *p; p++)
		n += *p == '\n';
	n++; /* a last line without its newline */
	for (char **e = environ; e && *e; e++, n++)
		bytes += strlen(*e) + 1;
	char **v = malloc((n + 1) * sizeof(*v) + bytes);
	if (!v)
		return -1;
	char *s = (char *)(v + n + 1);
	size_t k = 0;
	memcpy(s, settings, strlen(settings) + 1);
	for (char *line = s; *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (strchr(line, '='))
			v[k++] = line;
		if (!nl)
			break;
		line = nl + 1;
	}
	s += strlen(settings) + 1;
	for (char **e = environ; e && *e; e++) {
		if (!strncmp(*e, "EMBERPROF_", 10))
			continue;
		size_t len = strlen(*e) + 1;
		memcpy(s, *e, len);
		v[k++] = s;
		s += len;
	}
	v[k] = NULL;
	g_snap = v; /* an earlier copy is never freed (a fork child may read it) */
	atomic_store(&g_use, 1);
	return 0;
}

EMBER_HOT_TEXT void ember__env_snapshot_use(void)
{
	if (g_snap)
		atomic_store(&g_use, 1);
}

void ember__env_own_thread(void)
{
	t_own = 1;
}

EMBER_HOT_TEXT int ember__env_is_own_thread(void)
{
	return t_own;
}

EMBER_HOT_TEXT const char *ember__getenv(const char *name)
{
	if (!atomic_load(&g_use) && !t_own)
		return getenv(name);
	/* our thread and no copy: NULL, never the live environment */
	return ember__env_find(g_snap, name);
}

EMBER_HOT_TEXT const char *ember__env_find(char *const *env, const char *name)
{
	size_t n = strlen(name);
	for (char *const *e = env; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

const char *ember__secure_getenv(const char *name)
{
	if (!atomic_load(&g_use) && !t_own)
		return secure_getenv(name);
	return getauxval(AT_SECURE) ? NULL : ember__getenv(name);
}
