/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_asprof_pyro.c - the async-profiler backend (stand-in library,
 * fake_asprof.c) reporting to the fake Pyroscope server through the
 * Pyroscope reporter in JFR mode: every window arrives once, in order, at
 * /ingest?format=jfr as a multipart form whose "jfr" part is exactly the
 * recording the library wrote for that window, with the static tags in
 * the name and the CPU rate as sampleRate; the JDK's jfr tool reads what
 * the server stored. Then the spool: with the server down, the windows go
 * to the spool directory at shutdown; the next agent, server up, sends
 * them first (their multipart boundary re-read from the stored body), in
 * order, then its own. Also: a JFR-mode reporter refuses pprof, and both
 * formats at once are refused.
 */
#include <dirent.h>

#include "pyro_test.h"

/* An agent on the stand-in library with a JFR-mode Pyroscope reporter. */
static ember_agent *build(const fake_server *f, const char *spool)
{
	ember_builder *b;
	IT_CHECK(ember_builder_new(&b, "asprof-pyro") == 0, "builder");
	ember_builder_set_interval_ms(b, 300);
	ember_builder_set_backend(b, EMBER_BACKEND_ASYNC_PROFILER);
	ember_asprof_options ao = EMBER_ASPROF_OPTIONS_INIT;
	ao.library = FAKE_FULL;
	ao.cpu_interval_ns = 20000000; /* 50 Hz */
	IT_CHECK(ember_builder_set_asprof_options(b, &ao) == 0, "options: %s", ember_last_error());
	ember_builder_add_tag(b, "env", "test");
	ember_builder_add_tag(b, "region", "eu-west-1");
	ember_builder_set_log(b, NULL, NULL, EMBER_LOG_ERROR);
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = f->url;
	o.formats = EMBER_FORMAT_JFR;
	o.spool_dir = spool;
	o.flush_timeout_ms = spool ? 300 : 0;
	ember_reporter r;
	IT_CHECK(ember_reporter_pyroscope(&r, &o) == 0, "reporter: %s", ember_last_error());
	IT_CHECK(ember_builder_add_reporter(b, &r) == 0, "add reporter");
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	return a;
}

/* The window number in upload k's recording ("window <n>: "). */
static int upload_window(const fake_server *f, int k)
{
	char *file = fake_show(f, k, "file");
	IT_CHECK(file, "upload %d has no file", k);
	FILE *fp = fopen(file, "rb");
	IT_CHECK(fp, "cannot open %s", file);
	char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	free(file);
	const char *w = memmem(buf, n, "window ", 7);
	IT_CHECK(w, "upload %d holds no window", k);
	return atoi(w + 7);
}

static int count_spool(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.' && strstr(de->d_name, ".ems") != NULL;
	if (d)
		closedir(d);
	return n;
}

/* Server down: windows spooled; server up: the next agent sends them first. */
static void spool_replay(fake_server *f)
{
	char spool[160];
	snprintf(spool, sizeof(spool), "%s/spool", f->dir);
	int before;
	fake_counts(f, &before, NULL, NULL);
	fake_cmd(f, "/down");
	ember_agent *a = build(f, spool);
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	ember_stats st;
	for (int i = 0; i < 1200; i++) {
		ember_running_stats(run, &st);
		if (st.windows_reported >= 2)
			break;
		pt_sleep(0.1);
	}
	ember_running_stop(&a, run); /* the final window is not delivered: no error expected either way */
	ember_agent_stats(a, &st);
	ember_agent_shutdown(a); /* what is queued goes to the spool */
	int spooled = count_spool(spool);
	printf("server down: %llu windows, %d spooled\n", (unsigned long long)st.windows_reported, spooled);
	IT_CHECK(spooled >= 3 && (uint64_t)spooled == st.windows_reported, "every window must be spooled");

	fake_cmd(f, "/up");
	a = build(f, spool);
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	fake_wait_accepted(f, before + spooled + 1, 120);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
	ember_agent_stats(a, &st);
	ember_agent_shutdown(a);
	int acc, rej;
	fake_counts(f, &acc, &rej, NULL);
	printf("server up: %llu more windows; the server has %d uploads, %d rejected\n",
	       (unsigned long long)st.windows_reported, acc, rej);
	IT_CHECK(rej == 0 && acc == before + spooled + (int)st.windows_reported,
		 "expected %d + %d + %llu uploads, got %d", before, spooled,
		 (unsigned long long)st.windows_reported, acc);
	IT_CHECK(count_spool(spool) == 0, "the spool is not empty");
	for (int k = before; k < acc; k++) {
		fake_expect(f, k, "endpoint", "ingest-jfr");
		if (k > before)
			IT_CHECK(upload_window(f, k) == upload_window(f, k - 1) + 1,
				 "upload %d is window %d, after window %d", k, upload_window(f, k),
				 upload_window(f, k - 1));
	}
}

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	IT_CHECK(fp, "cannot open %s", path);
	fseek(fp, 0, SEEK_END);
	long n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	IT_CHECK(b && fread(b, 1, (size_t)n, fp) == (size_t)n, "cannot read %s", path);
	fclose(fp);
	b[n] = '\0';
	*len = (size_t)n;
	return b;
}

static void refusals(void)
{
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = "http://127.0.0.1:9";
	o.formats = EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR;
	ember_reporter r;
	IT_CHECK(ember_reporter_pyroscope(&r, &o) == EMBER_ERR_INVALID, "both formats must be refused");
	o.formats = EMBER_FORMAT_JFR;
	IT_CHECK(ember_reporter_pyroscope(&r, &o) == 0, "JFR reporter: %s", ember_last_error());
	IT_CHECK(r.formats == EMBER_FORMAT_JFR, "a JFR-mode reporter must ask for JFR only");
	uint8_t pb[4] = {1, 2, 3, 4};
	ember_report rep = {.app_name = "x", .profile_type = "cpu", .pprof = pb, .pprof_len = 4,
			    .format = EMBER_FORMAT_PPROF};
	IT_CHECK(r.report(r.userdata, &rep) == EMBER_ERR_INVALID && strstr(ember_last_error(), "JFR"),
		 "a JFR-mode reporter must refuse pprof: %s", ember_last_error());
	r.destroy(r.userdata);
}

int main(void)
{
	refusals();
	char logpath[64];
	snprintf(logpath, sizeof(logpath), "/tmp/it_asprof_pyro.%d.log", (int)getpid());
	setenv("FAKE_ASPROF_LOG", logpath, 1);
	fake_server f;
	fake_start(&f, NULL);

	ember_agent *a = build(&f, NULL);
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	fake_wait_accepted(&f, 3, 120);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
	/* The server keeps 1000 frames: async-profiler is told to keep no more
	 * (its default is 2048), as our own sampler is. */
	size_t loglen;
	char *log = slurp(logpath, &loglen);
	IT_CHECK(strstr(log, "exec start,") && strstr(log, ",jstackdepth=1000"),
		 "async-profiler was not started with jstackdepth=1000");
	free(log);
	unlink(logpath);
	setenv("FAKE_ASPROF_LOG", "/dev/null", 1);
	ember_stats st;
	ember_agent_stats(a, &st);
	int acc, rej, req;
	fake_counts(&f, &acc, &rej, &req);
	printf("%llu windows, %d accepted, %d rejected, %d requests\n",
	       (unsigned long long)st.windows_reported, acc, rej, req);
	IT_CHECK(acc >= 4 && (uint64_t)acc == st.windows_reported && rej == 0 && req == acc,
		 "every window once: %d accepted of %llu windows, %d rejected", acc,
		 (unsigned long long)st.windows_reported, rej);
	IT_CHECK(st.uploads_ok == (uint64_t)acc && st.asprof_errors == 0, "counters");
	for (int k = 0; k < acc; k++) {
		fake_expect(&f, k, "endpoint", "ingest-jfr");
		fake_expect(&f, k, "path", "/ingest");
		fake_expect(&f, k, "query.format", "jfr");
		fake_expect(&f, k, "query.name", "asprof-pyro{env=test,region=eu-west-1}");
		fake_expect(&f, k, "query.sampleRate", "50");
		fake_expect(&f, k, "query.spyName", "emberprof");
		fake_expect(&f, k, "label.service_name", "asprof-pyro");
		fake_expect(&f, k, "label.region", "eu-west-1");
		char *ct = fake_show(&f, k, "header.content-type");
		IT_CHECK(ct && !strncmp(ct, "multipart/form-data; boundary=emberprof-", 40),
			 "content type %s", ct ? ct : "(none)");
		free(ct);
		char *from = fake_show(&f, k, "query.from"), *until = fake_show(&f, k, "query.until");
		IT_CHECK(from && until && atoll(from) <= atoll(until) && atoll(from) > 1700000000,
			 "from %s until %s", from, until);
		free(from);
		free(until);
		char *file = fake_show(&f, k, "file");
		IT_CHECK(file, "no file");
		size_t len;
		char *jfr = slurp(file, &len);
		char want[32];
		snprintf(want, sizeof(want), "window %d: start,", k + 1);
		IT_CHECK(len > 68 && !memcmp(jfr, "FLR", 4) && memmem(jfr, len, want, strlen(want)),
			 "upload %d is not the recording of window %d", k, k + 1);
		IT_CHECK(memmem(jfr, len, "interval=20000000,", 18), "the CPU interval reached the library");
		free(jfr);
		if (k == acc - 1) {
			char cmd[512];
			snprintf(cmd, sizeof(cmd), "%s summary %s | grep -q 'emberprof.FakeWindow *1 '",
				 EMBER_JFR_TOOL, file);
			IT_CHECK(system(cmd) == 0, "jfr summary cannot read %s", file);
		}
		free(file);
	}
	ember_agent_shutdown(a);
	spool_replay(&f);
	fake_stop(&f);
	printf("ok\n");
	return 0;
}
