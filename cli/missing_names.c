/* SPDX-License-Identifier: Apache-2.0 */
/*
 * missing_names.c - after a table (`emberprof top`, the run summary):
 * what share of the samples has no function name, per module, and what
 * would name them: the distribution's debug packages (on Debian and
 * Ubuntu the package of each file, asked of dpkg-query, plus "-dbgsym"),
 * a debuginfod server (DEBUGINFOD_URLS), or `emberprof symbolize` later;
 * and `emberprof version`'s lines saying which of those this machine has.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "top/unnamed.h"

#define MAX_MODULES 4         /* modules listed */
#define DPKG_TIMEOUT_MS 3000  /* dpkg-query reads its whole database: bounded */

/* The distribution's ID from /etc/os-release ("debian", "ubuntu",
 * "fedora"...) into buf, "" if unknown. */
static void os_id(char *buf, size_t n)
{
	buf[0] = '\0';
	FILE *f = fopen("/etc/os-release", "r");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "ID=", 3))
			continue;
		char *v = line + 3;
		v += *v == '"';
		v[strcspn(v, "\"\n")] = '\0';
		snprintf(buf, n, "%s", v);
		break;
	}
	fclose(f);
}

/*
 * The Debian packages of paths[0..n): runs `dpkg-query -S` once (each
 * path also without a leading /usr: a merged-/usr system's maps say
 * /usr/lib/... where dpkg knows /lib/...), and writes "pkg-dbgsym ..." for
 * the packages found into buf (deduplicated). Bounded by DPKG_TIMEOUT_MS.
 * "" if none or no dpkg-query.
 */
static void dbgsym_packages(const char *const *paths, size_t n, char *buf, size_t len)
{
	buf[0] = '\0';
	char *argv[2 + 2 * MAX_MODULES + 1];
	size_t k = 0;
	argv[k++] = "dpkg-query";
	argv[k++] = "-S";
	for (size_t i = 0; i < n && i < MAX_MODULES; i++) {
		if (paths[i][0] != '/')
			continue;
		argv[k++] = (char *)paths[i];
		if (!strncmp(paths[i], "/usr/", 5))
			argv[k++] = (char *)paths[i] + 4;
	}
	argv[k] = NULL;
	if (k == 2)
		return;
	int fd[2];
	if (pipe2(fd, O_CLOEXEC) != 0)
		return;
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return;
	}
	if (pid == 0) {
		dup2(fd[1], 1);
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2);
		execvp("dpkg-query", argv);
		_exit(127);
	}
	close(fd[1]);
	char out[4096];
	size_t got = 0;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long spent = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
		struct pollfd p = {fd[0], POLLIN, 0};
		if (spent >= DPKG_TIMEOUT_MS || poll(&p, 1, (int)(DPKG_TIMEOUT_MS - spent)) <= 0)
			break;
		ssize_t r = read(fd[0], out + got, sizeof(out) - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == sizeof(out) - 1)
			break;
	}
	out[got] = '\0';
	close(fd[0]);
	kill(pid, SIGKILL); /* done or too slow: either way no longer needed */
	waitpid(pid, NULL, 0);
	/* lines "pkg[:arch][, pkg2]: /path" */
	size_t used = 0;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		char *colon = strstr(line, ": /");
		if (!colon)
			continue;
		*colon = '\0';
		line[strcspn(line, ",")] = '\0';
		line[strcspn(line, ":")] = '\0'; /* the architecture qualifier */
		char want[160];
		snprintf(want, sizeof(want), "%s-dbgsym", line);
		if (strstr(buf, want))
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used ? " " : "", want);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
}

void ember__cli_print_missing_names(const ember__unnamed *u, const char *what, FILE *out)
{
	int64_t total = ember__unnamed_total(u), none = ember__unnamed_sum(u);
	if (total <= 0 || none * 100 < total) /* under 1%: not worth a word */
		return;
	fprintf(out, "\nno function name for %.1f%% of %s, in:\n", 100.0 * (double)none / (double)total,
		what);
	size_t n = ember__unnamed_count(u);
	const char *paths[MAX_MODULES];
	size_t np = 0;
	for (size_t i = 0; i < n && np < MAX_MODULES; i++) {
		ember__unnamed_mod m;
		ember__unnamed_module(u, i, &m);
		if (m.unnamed * 1000 < total)
			break; /* under 0.1% */
		const char *base = strrchr(m.path, '/');
		fprintf(out, "  %5.1f%%  %-20s %s%s%.12s\n", 100.0 * (double)m.unnamed / (double)total,
			base ? base + 1 : m.path, m.path, *m.build_id ? "  build ID " : "",
			m.build_id);
		paths[np++] = m.path;
	}
	char id[64], pkgs[512];
	os_id(id, sizeof(id));
	int deb = !strcmp(id, "debian") || !strcmp(id, "ubuntu");
	dbgsym_packages(paths, deb ? np : 0, pkgs, sizeof(pkgs));
	if (*pkgs)
		fprintf(out, "  to name them: apt install %s (once the %s archive is in apt's sources);\n",
			pkgs, !strcmp(id, "ubuntu") ? "ddebs.ubuntu.com" : "debian-debug");
	else
		fprintf(out, "  to name them: the distribution's debug packages (Debian, Ubuntu: "
			     "PACKAGE-dbgsym, `dpkg -S FILE` names the package; Fedora: "
			     "dnf debuginfo-install), or build with -g;\n");
	const char *urls = getenv("DEBUGINFOD_URLS");
	const char *server = !strcmp(id, "debian")   ? "https://debuginfod.debian.net"
			     : !strcmp(id, "ubuntu") ? "https://debuginfod.ubuntu.com"
			     : !strcmp(id, "fedora") ? "https://debuginfod.fedoraproject.org"
						     : "https://debuginfod.elfutils.org";
	if (urls && *urls) /* its value is not shown: a URL may carry credentials */
		fprintf(out, "  or a debuginfod server that has them (DEBUGINFOD_URLS is set); "
			     "or later: emberprof symbolize FILE...\n");
	else
		fprintf(out, "  or DEBUGINFOD_URLS=%s (unset here); or later: emberprof symbolize "
			     "FILE...\n", server);
}

/* Is a library loadable (by soname)? Loaded and closed again. */
static int loadable(const char *soname)
{
	void *h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
	if (h)
		dlclose(h);
	return h != NULL;
}

void ember__cli_print_name_sources(FILE *out)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	struct stat st;
	int debugdir = stat("/usr/lib/debug/.build-id", &st) == 0 && S_ISDIR(st.st_mode);
	fprintf(out, "names for stripped code:\n");
	fprintf(out, "  debug files on disk: /usr/lib/debug/.build-id %s\n",
		debugdir ? "present" : "absent (no -dbgsym/-debuginfo package installed)");
	/* set or not, never its value (version prints nothing from the
	 * environment: a URL may carry credentials) */
	fprintf(out, "  debuginfod: client library libdebuginfod.so.1 %s, DEBUGINFOD_URLS %s\n",
		loadable("libdebuginfod.so.1") ? "present" : "absent",
		urls && *urls ? "set" : "unset");
	fprintf(out, "  MiniDebugInfo (.gnu_debugdata): liblzma.so.5 %s\n",
		loadable("liblzma.so.5") ? "present (libdw reads it)" : "absent: not read");
	fprintf(out, "  otherwise: functions named MODULE+0xADDR from .eh_frame; "
		     "emberprof symbolize adds names later\n");
}
