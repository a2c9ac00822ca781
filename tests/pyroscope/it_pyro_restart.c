/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_pyro_restart.c - the spool survives an application restart.
 *
 * Run 1 (a separate process) profiles for 3 s while the server is down:
 * at shutdown every undelivered window is in the spool directory, one
 * file each. The server comes back; run 2 (another process, same spool)
 * sends run 1's windows first, in order, then its own. The server must
 * end up with run 1's and run 2's windows, in order, none twice, and the
 * spool must be empty.
 *
 * The parent re-executes this program as "child <url> <spool> <out>";
 * the child writes the start times of the windows it reported to <out>.
 */
#include <dirent.h>

#include "pyro_test.h"

static it_capture cap;

static int count_spool_files(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strstr(de->d_name, ".ems") && de->d_name[0] != '.')
			n++;
	if (d)
		closedir(d);
	return n;
}

static int child(const char *url, const char *spool, const char *out, double seconds)
{
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = url;
	o.spool_dir = spool;
	o.flush_timeout_ms = 3000;
	static pt_log logbuf;
	ember_agent *a = pt_build("restart.app", &o, &cap, &logbuf, NULL);
	IT_CHECK(pt_run(&a, seconds, NULL) == 0, "stop: %s", ember_last_error());
	ember_agent_shutdown(a);
	FILE *f = fopen(out, "w");
	IT_CHECK(f, "cannot write %s", out);
	for (size_t i = 0; i < cap.n; i++)
		fprintf(f, "%lld\n", (long long)cap.w[i].start_ns);
	fclose(f);
	if (getenv("EMBER_TEST_VERBOSE"))
		fputs(logbuf.text, stderr);
	return 0;
}

static void run_child(const char *url, const char *spool, const char *out, const char *seconds)
{
	pid_t pid = fork();
	IT_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		execl("/proc/self/exe", "it_pyro_restart", "child", url, spool, out, seconds, (char *)NULL);
		_exit(127);
	}
	int st;
	IT_CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		 "child run failed (status %d)", st);
}

static int read_times(const char *path, long long *t, int cap_n)
{
	FILE *f = fopen(path, "r");
	IT_CHECK(f, "cannot read %s", path);
	int n = 0;
	while (n < cap_n && fscanf(f, "%lld", &t[n]) == 1)
		n++;
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "child"))
		return child(argv[2], argv[3], argv[4], atof(argv[5]));

	fake_server f;
	fake_start(&f, NULL);
	char spool[160], out1[160], out2[160];
	snprintf(spool, sizeof(spool), "%s/spool", f.dir);
	snprintf(out1, sizeof(out1), "%s/run1.txt", f.dir);
	snprintf(out2, sizeof(out2), "%s/run2.txt", f.dir);

	fake_cmd(&f, "/down");
	run_child(f.url, spool, out1, "3");
	static long long t[512];
	int n1 = read_times(out1, t, 512);
	int files = count_spool_files(spool);
	printf("run 1 (server down): %d windows, %d files in the spool\n", n1, files);
	IT_CHECK(n1 >= 3 && files == n1, "every window of run 1 must be in the spool");

	fake_cmd(&f, "/up");
	run_child(f.url, spool, out2, "2");
	int n2 = read_times(out2, t + n1, 512 - n1);
	static fake_profile rows[512];
	int n = fake_list(&f, rows, 512);
	printf("run 2 (server up): %d windows of its own; the server has %d profiles\n", n2, n);
	IT_CHECK(n == n1 + n2, "expected %d + %d profiles, the server has %d", n1, n2, n);
	for (int i = 0; i < n; i++) {
		IT_CHECK(rows[i].time_nanos == t[i], "profile %d is window %lld, expected %lld (%s)", i,
			 rows[i].time_nanos, t[i], i < n1 ? "run 1" : "run 2");
		for (int k = 0; k < i; k++)
			IT_CHECK(strcmp(rows[i].id, rows[k].id), "profile %d repeats profile %d", i, k);
	}
	IT_CHECK(count_spool_files(spool) == 0, "the spool is not empty after run 2");
	fake_go_pprof_all(&f, n);
	fake_stop(&f);
	printf("ok\n");
	return 0;
}
