/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_multi_reporter.c - ember_reporter_multi(): each inner reporter gets
 * exactly the formats it asked for, one failing does not stop the others,
 * the error names every reporter that failed with its message, bind/stats/
 * destroy are forwarded (destroy exactly once, also when creation fails),
 * and the union of formats is advertised. Then through a real agent: a
 * multi-reporter of a pprof-only and a JFR-only reporter gets each window
 * once per profile as pprof and once as JFR.
 */
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "emberprof.h"

typedef struct fake {
	const char *fail_msg; /* fail every report with this message, NULL: succeed */
	unsigned fail_format; /* only reports of these formats fail; 0: all */
	int bind_fails;
	int reports[4];       /* by format */
	int binds, destroys, stats;
	char last_type[16];
} fake;

static int fake_report(void *ud, const ember_report *r)
{
	fake *f = ud;
	f->reports[r->format & 3]++;
	snprintf(f->last_type, sizeof(f->last_type), "%s", r->profile_type ? r->profile_type : "");
	if (f->fail_msg && (!f->fail_format || (f->fail_format & r->format)))
		return ember_set_error(EMBER_ERR_IO, "%s", f->fail_msg);
	return 0;
}

static int fake_bind(void *ud, const ember_agent_info *info)
{
	fake *f = ud;
	f->binds++;
	return f->bind_fails ? ember_set_error(EMBER_ERR_INVALID, "bad app name %s", info->app_name)
			     : 0;
}

static void fake_stats(void *ud, ember_stats *acc)
{
	fake *f = ud;
	f->stats++;
	acc->uploads_ok += 1;
}

static void fake_destroy(void *ud)
{
	((fake *)ud)->destroys++;
}

static ember_reporter fake_reporter(fake *f, const char *name, unsigned formats)
{
	ember_reporter r = {.name = name, .report = fake_report, .destroy = fake_destroy,
			    .userdata = f, .bind = fake_bind, .stats = fake_stats,
			    .formats = formats};
	return r;
}

static void test_fan_out(void)
{
	fake a = {0}, b = {0}, c = {.fail_msg = "C broke", .fail_format = EMBER_FORMAT_JFR},
	     d = {.fail_msg = "D down"};
	char name_a[] = "alpha"; /* the multi-reporter copies names */
	ember_reporter rs[] = {
		fake_reporter(&a, name_a, 0), /* 0: pprof */
		fake_reporter(&b, "bravo", EMBER_FORMAT_JFR),
		fake_reporter(&c, "charlie", EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR),
		fake_reporter(&d, "delta", EMBER_FORMAT_PPROF),
	};
	ember_reporter m;
	CHECK_EQ_INT(ember_reporter_multi(&m, rs, 4), 0);
	name_a[0] = 'X';
	CHECK_EQ_INT(m.formats, EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR);
	CHECK_EQ_STR(m.name, "multi(alpha,bravo,charlie,delta)");

	ember_report pp = {.app_name = "app", .profile_type = "cpu", .format = EMBER_FORMAT_PPROF};
	CHECK_EQ_INT(m.report(m.userdata, &pp), EMBER_ERR_REPORTER);
	CHECK_EQ_STR(ember_last_error(), "reporter delta: D down");
	CHECK_EQ_INT(a.reports[EMBER_FORMAT_PPROF], 1);
	CHECK_EQ_INT(b.reports[EMBER_FORMAT_PPROF], 0);
	CHECK_EQ_INT(c.reports[EMBER_FORMAT_PPROF], 1);
	CHECK_EQ_INT(d.reports[EMBER_FORMAT_PPROF], 1);

	ember_report jf = {.app_name = "app", .profile_type = "jfr", .format = EMBER_FORMAT_JFR};
	CHECK_EQ_INT(m.report(m.userdata, &jf), EMBER_ERR_REPORTER);
	CHECK_EQ_STR(ember_last_error(), "reporter charlie: C broke");
	CHECK_EQ_INT(a.reports[EMBER_FORMAT_JFR], 0);
	CHECK_EQ_INT(b.reports[EMBER_FORMAT_JFR], 1);
	CHECK_EQ_INT(c.reports[EMBER_FORMAT_JFR], 1);
	CHECK_EQ_INT(d.reports[EMBER_FORMAT_JFR], 0);
	CHECK_EQ_STR(b.last_type, "jfr");

	/* Two failures in one report: both named. */
	c.fail_format = 0;
	CHECK_EQ_INT(m.report(m.userdata, &pp), EMBER_ERR_REPORTER);
	CHECK_EQ_STR(ember_last_error(), "reporter charlie: C broke; reporter delta: D down");
	CHECK_EQ_INT(a.reports[EMBER_FORMAT_PPROF], 2); /* a before them still got it */

	/* All well: 0. */
	c.fail_msg = d.fail_msg = NULL;
	CHECK_EQ_INT(m.report(m.userdata, &pp), 0);

	ember_stats st;
	memset(&st, 0, sizeof(st));
	m.stats(m.userdata, &st);
	CHECK_EQ_INT(st.uploads_ok, 4);

	ember_agent_info info = {.app_name = "app"};
	CHECK_EQ_INT(m.bind(m.userdata, &info), 0);
	CHECK_EQ_INT(a.binds + b.binds + c.binds + d.binds, 4);
	b.bind_fails = 1;
	CHECK_EQ_INT(m.bind(m.userdata, &info), EMBER_ERR_INVALID);
	CHECK_EQ_STR(ember_last_error(), "reporter bravo: bad app name app");

	m.destroy(m.userdata);
	CHECK_EQ_INT(a.destroys, 1);
	CHECK_EQ_INT(b.destroys, 1);
	CHECK_EQ_INT(c.destroys, 1);
	CHECK_EQ_INT(d.destroys, 1);
}

static void test_optional_callbacks(void)
{
	/* No inner bind/stats: the multi-reporter has none either. */
	fake a = {0};
	ember_reporter r = {.name = "plain", .report = fake_report, .userdata = &a};
	ember_reporter m;
	CHECK_EQ_INT(ember_reporter_multi(&m, &r, 1), 0);
	CHECK(m.bind == NULL);
	CHECK(m.stats == NULL);
	CHECK_EQ_INT(m.formats, EMBER_FORMAT_PPROF);
	m.destroy(m.userdata);
}

static void test_bad_arguments_destroy_all(void)
{
	fake a = {0}, b = {0};
	ember_reporter rs[] = {fake_reporter(&a, "a", 0), fake_reporter(&b, "b", 0)};
	rs[1].report = NULL;
	ember_reporter m;
	CHECK_EQ_INT(ember_reporter_multi(&m, rs, 2), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "reporter 1 (b) has no report callback"));
	CHECK_EQ_INT(a.destroys, 1); /* ownership passed even on failure */
	CHECK_EQ_INT(b.destroys, 1);
	CHECK_EQ_INT(ember_reporter_multi(&m, NULL, 0), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "no reporters"));
}

/* Burns CPU for about `ms` of thread CPU time. */
static double spin(int ms)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	volatile double x = 0;
	do {
		for (int i = 0; i < 10000; i++)
			x += i * 0.5;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	return x;
}

static void test_through_agent(void)
{
	fake pp = {0}, jf = {0};
	ember_reporter rs[] = {fake_reporter(&pp, "pp", EMBER_FORMAT_PPROF),
			       fake_reporter(&jf, "jf", EMBER_FORMAT_JFR)};
	ember_reporter m;
	CHECK_EQ_INT(ember_reporter_multi(&m, rs, 2), 0);
	ember_builder *b;
	CHECK_EQ_INT(ember_builder_new(&b, "multi-test"), 0);
	ember_builder_set_wall(b, 10);
	ember_builder_set_interval_ms(b, 3600000); /* one window, unless the run crosses an hour */
	ember_builder_set_log(b, NULL, NULL, EMBER_LOG_ERROR);
	CHECK_EQ_INT(ember_builder_add_reporter(b, &m), 0);
	ember_agent *a;
	CHECK_EQ_INT(ember_builder_build(&a, b), 0);
	CHECK_EQ_INT(pp.binds + jf.binds, 2);
	ember_running *run;
	CHECK_EQ_INT(ember_agent_start(&run, a), 0);
	spin(100);
	CHECK_EQ_INT(ember_running_stop(&a, run), 0);
	/* each window: cpu and wall as pprof, once as JFR */
	CHECK(jf.reports[EMBER_FORMAT_JFR] >= 1);
	CHECK_EQ_INT(pp.reports[EMBER_FORMAT_PPROF], 2 * jf.reports[EMBER_FORMAT_JFR]);
	CHECK_EQ_INT(pp.reports[EMBER_FORMAT_JFR], 0);
	CHECK_EQ_INT(jf.reports[EMBER_FORMAT_PPROF], 0);
	ember_stats st;
	ember_agent_stats(a, &st);
	CHECK_EQ_INT(st.uploads_ok, 2); /* stats forwarded through the agent */
	CHECK_EQ_INT(st.report_failures, 0);
	ember_agent_shutdown(a);
	CHECK_EQ_INT(pp.destroys, 1);
	CHECK_EQ_INT(jf.destroys, 1);
}

int main(void)
{
	RUN(test_fan_out);
	RUN(test_optional_callbacks);
	RUN(test_bad_arguments_destroy_all);
	RUN(test_through_agent);
	return CHECK_DONE();
}
