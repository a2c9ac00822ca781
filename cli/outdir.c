/* SPDX-License-Identifier: Apache-2.0 */
/*
 * outdir.c - the output directory of `emberprof run`: making the default
 * one, absolute paths, and listing the finished profiles in it (so that
 * only the files written by this run are summarized).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "emberprof.h"
#include "report/local.h"
#include "util/error.h"

char *ember__cli_absolute(const char *path)
{
	if (path[0] == '/') {
		char *s = strdup(path);
		if (!s)
			ember__error_oom("path");
		return s;
	}
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd))) {
		ember__error_errno(EMBER_ERR_IO, errno, "cannot get the current directory");
		return NULL;
	}
	size_t n = strlen(cwd), m = strlen(path);
	while (m > 2 && path[0] == '.' && path[1] == '/') { /* "./x" -> "x" */
		path += 2;
		m -= 2;
	}
	char *s = malloc(n + m + 2);
	if (!s) {
		ember__error_oom("path");
		return NULL;
	}
	memcpy(s, cwd, n);
	if (n == 0 || cwd[n - 1] != '/')
		s[n++] = '/';
	memcpy(s + n, path, m + 1);
	return s;
}

/* The command's base name, restricted to safe file-name characters. */
static void command_label(const char *cmd, char *out, size_t cap)
{
	const char *base = strrchr(cmd, '/');
	base = base ? base + 1 : cmd;
	size_t n = 0;
	for (const char *p = base; *p && n + 1 < cap && n < 64; p++) {
		char c = *p;
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '.' || c == '_' || c == '-';
		out[n++] = ok ? c : '_';
	}
	if (n == 0 || out[0] == '.') {
		/* never a hidden or empty name */
		snprintf(out, cap, "cmd");
		return;
	}
	out[n] = '\0';
}

int ember__cli_make_default_outdir(const char *cmd, char **out)
{
	char label[80], stamp[32], name[160];
	struct tm tm;
	time_t now = time(NULL);

	*out = NULL;
	command_label(cmd, label, sizeof(label));
	if (!localtime_r(&now, &tm))
		return ember__error(EMBER_ERR_SYS, "cannot read the local time");
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	for (unsigned k = 1; k < 1000; k++) {
		if (k == 1)
			snprintf(name, sizeof(name), "emberprof-%s-%s", label, stamp);
		else
			snprintf(name, sizeof(name), "emberprof-%s-%s-%u", label, stamp, k);
		if (mkdir(name, 0700) == 0) {
			*out = ember__cli_absolute(name);
			if (!*out) {
				rmdir(name);
				return EMBER_ERR_NOMEM;
			}
			return 0;
		}
		if (errno != EEXIST)
			return ember__error_errno(EMBER_ERR_IO, errno,
						  "cannot create the output directory '%s' in the "
						  "current directory (use --output DIR)",
						  name);
	}
	return ember__error(EMBER_ERR_IO, "cannot find a free output directory name like '%s'",
			    name);
}

static int is_profile_name(const char *name, const char *suffix)
{
	size_t n = strlen(name), ns = strlen(suffix);
	return name[0] != '.' && n > ns && strcmp(name + n - ns, suffix) == 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ember__cli_list_profiles(const char *dir, ember__cli_names *out)
{
	return ember__cli_list_files(dir, EMBER_LOCAL_SUFFIX, out);
}

int ember__cli_list_files(const char *dir, const char *suffix, ember__cli_names *out)
{
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot list '%s'", dir);
	}
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d)) != NULL) {
		if (!is_profile_name(e->d_name, suffix))
			continue;
		if (out->n == out->cap) {
			size_t cap = out->cap ? out->cap * 2 : 16;
			char **v = realloc(out->v, cap * sizeof(*v));
			if (!v) {
				rc = ember__error_oom("file list");
				break;
			}
			out->v = v;
			out->cap = cap;
		}
		if (!(out->v[out->n] = strdup(e->d_name))) {
			rc = ember__error_oom("file name");
			break;
		}
		out->n++;
	}
	closedir(d);
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_names);
	return rc;
}

int ember__cli_names_has(const ember__cli_names *l, const char *name)
{
	return l->n && bsearch(&name, l->v, l->n, sizeof(*l->v), cmp_names) != NULL;
}

void ember__cli_names_free(ember__cli_names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}
