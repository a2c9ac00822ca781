/*
 * it_asprof_pyro.c - the async-profiler backend (stand-in library,
 * fake_asprof.c) reporting to the fake Pyroscope server through the
 * Pyroscope reporter in JFR mode: every window arrives once, in order, at
 * /ingest?format=jfr as a multipart form whose "jfr" part is exactly the
 * recording the library wrote for that window, with the static tags in
 * the name and the CPU rate as sampleRate; the JDK's jfr tool reads what
 * the server stored. Also: a JFR-mode reporter refuses pprof, and both
 * formats at once are refused.
 */
#include "pyro_test.h"

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
	setenv("FAKE_ASPROF_LOG", "/dev/null", 1);
	fake_server f;
	fake_start(&f, NULL);

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
	ember_pyroscope_options o = EMBER_PYROSCOPE_OPTIONS_INIT;
	o.url = f.url;
	o.formats = EMBER_FORMAT_JFR;
	ember_reporter r;
	IT_CHECK(ember_reporter_pyroscope(&r, &o) == 0, "reporter: %s", ember_last_error());
	IT_CHECK(ember_builder_add_reporter(b, &r) == 0, "add reporter");
	ember_agent *a;
	IT_CHECK(ember_builder_build(&a, b) == 0, "build: %s", ember_last_error());
	ember_running *run;
	IT_CHECK(ember_agent_start(&run, a) == 0, "start: %s", ember_last_error());
	fake_wait_accepted(&f, 3, 120);
	IT_CHECK(ember_running_stop(&a, run) == 0, "stop: %s", ember_last_error());
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
	fake_stop(&f);
	printf("ok\n");
	return 0;
}
