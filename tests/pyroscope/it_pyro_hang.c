/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_pyro_hang.c - a server that accepts connections and never answers
 * does not block the application: its threads complete a fixed amount of
 * work, stop() returns within the flush timeout plus a margin, and
 * shutdown cancels the request in flight promptly. What could not be
 * delivered is dropped and counted without a spool (part 1), and goes to
 * the spool with one (part 2).
 *
 * Nothing here measures how fast the application ran: the assertions are
 * that the work finished and that the bounded waits are bounded.
 */
#include <dirent.h>

#include "pyro_test.h"

static it_capture cap;
static pt_log logbuf;

#define FLUSH_MS 1000
#define MARGIN_S 5.0 /* generous: encoding the final window, a loaded machine */

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

static void run(const fake_server *f, const char *spool)
{
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = f->url;
	o.flush_timeout_ms = FLUSH_MS;
	o.spool_dir = spool;
	it_capture_free(&cap);
	memset(&cap, 0, sizeof(cap));
	ember_agent *a = pt_build("hang.app", &o, &cap, &logbuf, NULL);
	ember_running *r;
	IT_CHECK(ember_agent_start(&r, a) == 0, "start: %s", ember_last_error());

	/* Two threads, each a fixed amount of work (about 2.5 s of CPU). */
	pt_burner w[2] = {{.limit = 125}, {.limit = 125}};
	for (int i = 0; i < 2; i++) {
		w[i].limit = 125;
		pt_burn_start(&w[i]);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(w[i].th, NULL);
		IT_CHECK(w[i].rounds == w[i].limit, "worker %d did %lu of %lu work units", i,
			 w[i].rounds, w[i].limit);
	}
	ember_stats st;
	ember_running_stats(r, &st);
	IT_CHECK(st.uploads_ok == 0, "a hanging server accepted %llu uploads",
		 (unsigned long long)st.uploads_ok);

	double t0 = pt_now();
	int rc = ember_running_stop(&a, r);
	double stop_s = pt_now() - t0;
	IT_CHECK(rc == 0, "stop: %s", ember_last_error());
	printf("stop() returned after %.2f s (flush timeout %.1f s); %zu windows reported\n", stop_s,
	       FLUSH_MS / 1000.0, cap.n);
	IT_CHECK(stop_s < FLUSH_MS / 1000.0 + MARGIN_S, "stop() took %.2f s", stop_s);
	IT_CHECK(pt_log_has(&logbuf, "not delivered within"), "the flush timeout was not logged");

	t0 = pt_now();
	ember_agent_shutdown(a);
	double shut_s = pt_now() - t0;
	printf("shutdown took %.2f s\n", shut_s);
	IT_CHECK(shut_s < MARGIN_S, "shutdown() took %.2f s: the request in flight was not cancelled",
		 shut_s);
	int acc;
	fake_counts(f, &acc, NULL, NULL);
	IT_CHECK(acc == 0, "the hanging server accepted %d profiles", acc);
	if (spool) {
		int files = count_spool_files(spool);
		printf("%d windows in the spool\n", files);
		IT_CHECK(files == (int)cap.n, "%zu windows reported but %d spooled", cap.n, files);
	} else {
		IT_CHECK(pt_log_has(&logbuf, "dropped: undelivered at shutdown and no spool"),
			 "undelivered windows were not reported as dropped");
	}
}

int main(void)
{
	fake_server f;
	fake_start(&f, NULL);
	fake_cmd(&f, "/mode?m=hang");
	run(&f, NULL);
	char spool[160];
	snprintf(spool, sizeof(spool), "%s/spool", f.dir);
	run(&f, spool);
	it_capture_free(&cap);
	fake_stop(&f);
	printf("ok\n");
	return 0;
}
