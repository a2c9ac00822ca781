/* SPDX-License-Identifier: Apache-2.0 */
/*
 * maps_prog.c - the program test_lazy_libs.sh profiles: burns CPU in
 * maps_inner (called by maps_outer; a copy linked with -rdynamic has both
 * in .dynsym, so that it is still named when stripped to it), with
 * maps_mix inlined into it, then waits until the agent has written a
 * profile after the burn (a window it sampled the burn in, so it has read
 * the unwind tables and named or mapped the frames by then: no timing
 * involved) and prints which of the elfutils libraries and their
 * dependencies its own /proc/self/maps shows:
 *   "waited: profile" (or "waited: none", after 60 s without one)
 *   "mapped: libelf" ... one line a library found
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

unsigned long maps_inner(unsigned long n);
unsigned long maps_outer(unsigned long n);

/* Inlined: only the DWARF names it (an inline frame under maps_inner).
 * Nearly all of maps_inner's instructions are its, so that samples land
 * in it whatever the sampling does. */
static inline __attribute__((always_inline)) unsigned long maps_mix(unsigned long i,
								     unsigned long s)
{
	unsigned long x = i;
	for (int j = 0; j < 16; j++)
		x = x * 0x9E3779B97F4A7C15ul + (s >> (j & 7));
	return x;
}

__attribute__((noinline)) unsigned long maps_inner(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += maps_mix(i, s);
	return s;
}

__attribute__((noinline)) unsigned long maps_outer(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long k = 0; k < 20; k++)
		s += maps_inner(n + k);
	return s;
}

/* Is there a profile (*.pb.gz) in dir modified at or after `since`? */
static int profile_since(const char *dir, const struct timespec *since)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int found = 0;
	struct dirent *de;
	while (!found && (de = readdir(d))) {
		char p[4096];
		struct stat st;
		if (!strstr(de->d_name, ".pb.gz"))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		found = stat(p, &st) == 0 &&
			(st.st_mtim.tv_sec > since->tv_sec ||
			 (st.st_mtim.tv_sec == since->tv_sec && st.st_mtim.tv_nsec >= since->tv_nsec));
	}
	closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	for (int r = 0; r < 10; r++)
		sink += maps_outer(n);
	struct timespec end;
	clock_gettime(CLOCK_REALTIME, &end);
	const char *dir = getenv("EMBERPROF_OUTPUT_DIR");
	int waited = 0;
	for (int i = 0; dir && i < 600 && !(waited = profile_since(dir, &end)); i++)
		usleep(100000);
	printf("waited: %s\n", waited ? "profile" : "none");
	static const char *const libs[] = {"libelf", "libdw", "liblzma", "libbz2"};
	char seen[4] = {0};
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	while (f && fgets(line, sizeof(line), f)) {
		const char *base = strrchr(line, '/');
		for (int i = 0; base && i < 4; i++)
			if (!strncmp(base + 1, libs[i], strlen(libs[i])) &&
			    (base[1 + strlen(libs[i])] == '.' || base[1 + strlen(libs[i])] == '-'))
				seen[i] = 1;
	}
	if (f)
		fclose(f);
	for (int i = 0; i < 4; i++)
		if (seen[i])
			printf("mapped: %s\n", libs[i]);
	printf("sum %lu\n", sink);
	return 0;
}
