/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_pyro_outage.c - the server goes down for 30 s and comes back: every
 * window is delivered, in order, none twice.
 *
 * The agent reports 1 s windows while the fake server's listening socket
 * is closed (connections refused). The queue holds 4 windows, so most of
 * the outage's windows overflow to the spool directory; when the server
 * is back, the oldest spooled window goes first, then the rest of the
 * spool, then the queue. The outage lasts 30 s, the number
 * (EMBER_PYRO_OUTAGE_S overrides it, e.g. for a quick local run).
 */
#include <dirent.h>

#include "pyro_test.h"

static it_capture cap;
static pt_log logbuf;

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

int main(void)
{
	double outage = getenv("EMBER_PYRO_OUTAGE_S") ? atof(getenv("EMBER_PYRO_OUTAGE_S")) : 30;
	fake_server f;
	fake_start(&f, NULL);
	char spool[160];
	snprintf(spool, sizeof(spool), "%s/spool", f.dir);
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = f.url;
	o.queue_len = 4;
	o.spool_dir = spool;
	ember_agent *a = pt_build("outage.app", &o, &cap, &logbuf, NULL);
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	pt_burner b = {0};
	pt_burn_start(&b);

	pt_sleep(2.2);
	size_t before = cap.n;
	fake_cmd(&f, "/down");
	printf("server down after %zu windows, for %.0f s\n", before, outage);
	unsigned long rounds0 = b.rounds;
	pt_sleep(outage);
	IT_CHECK(b.rounds > rounds0, "the application's thread stopped working during the outage");
	ember_stats st;
	ember_running_stats(run, &st);
	printf("during the outage: %llu retried, %llu spooled, %d files in the spool\n",
	       (unsigned long long)st.uploads_retried, (unsigned long long)st.uploads_spooled,
	       count_spool_files(spool));
	IT_CHECK(st.uploads_retried > 0, "no retries while the server was down");
	IT_CHECK(st.uploads_spooled > 0 && count_spool_files(spool) > 0,
		 "a 4-window queue should have overflowed to the spool");
	fake_cmd(&f, "/up");

	/* Backoff is capped at 30 s: give the uploader time to notice. */
	size_t want = cap.n;
	int got = fake_wait_accepted(&f, (int)want, 90);
	printf("server back: %d of %zu windows delivered\n", got, want);
	pt_sleep(1.5);
	pt_burn_stop(&b);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());

	static fake_profile rows[512];
	int n = fake_list(&f, rows, 512);
	pt_check_same_windows(&f, &cap, 0, rows, n);
	ember_agent_stats(a, &st);
	printf("%d windows delivered in order; %llu ok, %llu retried, %llu spooled, %llu dropped\n", n,
	       (unsigned long long)st.uploads_ok, (unsigned long long)st.uploads_retried,
	       (unsigned long long)st.uploads_spooled, (unsigned long long)st.uploads_dropped);
	IT_CHECK(st.uploads_ok == (uint64_t)n && st.uploads_dropped == 0 && st.uploads_failed == 0,
		 "counters disagree with the server");
	IT_CHECK(count_spool_files(spool) == 0, "the spool still holds %d files",
		 count_spool_files(spool));
	IT_CHECK(pt_log_has(&logbuf, "retrying"), "the outage was not logged");
	fake_go_pprof_all(&f, n);
	ember_agent_shutdown(a);
	it_capture_free(&cap);
	fake_stop(&f);
	printf("ok\n");
	return 0;
}
