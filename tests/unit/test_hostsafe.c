/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hostsafe.c - the pieces that keep the agent from harming its host
 *: redaction of secrets in messages (util/redact.c), owned
 * descriptors (util/ownfd.c), and the spool and local reporter surviving
 * a program that closes their descriptors and reuses the numbers for
 * files of its own - which must never be written, replaced or closed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "emberprof.h"
#include "report/local.h"
#include "upload/spool.h"
#include "util/ownfd.h"
#include "util/redact.h"

static void test_redact_url(void)
{
	char b[256];
	CHECK_EQ_STR(ember__redact_url("http://u:pw@host:1/p", b, sizeof(b)),
		     "http://<hidden>@host:1/p");
	CHECK_EQ_STR(ember__redact_url("https://host/base", b, sizeof(b)), "https://host/base");
	CHECK_EQ_STR(ember__redact_url("http://host/x?token=abc#f", b, sizeof(b)),
		     "http://host/x?<hidden>");
	CHECK_EQ_STR(ember__redact_url("http://a@b:c@host/", b, sizeof(b)), "http://<hidden>@host/");
	/* '@' after the authority is not userinfo */
	CHECK_EQ_STR(ember__redact_url("http://host/a@b", b, sizeof(b)), "http://host/a@b");
	CHECK_EQ_STR(ember__redact_url("u:pw@host", b, sizeof(b)), "<hidden>@host");
	char small[12];
	CHECK_EQ_STR(ember__redact_url("http://u:pw@host", small, sizeof(small)), "http://<hid");
}

static void test_redact_names_and_values(void)
{
	char b[256];
	const char *secret[] = {"EMBERPROF_SERVER_AUTH_TOKEN", "PYROSCOPE_BASIC_AUTH_PASSWORD",
				"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "PYROSCOPE_HTTP_HEADERS",
				"EMBERPROF_SERVER_HEADERS", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
				"X-Api-Key", "Cookie", "Authorization"};
	for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++) {
		CHECK(ember__redact_is_secret_name(secret[i]));
		CHECK_EQ_STR(ember__redact_value(secret[i], "s3cr3t", b, sizeof(b)), "<hidden>");
	}
	const char *plain[] = {"EMBERPROF_SAMPLE_RATE", "EMBERPROF_SERVER_URL", "EMBERPROF_S3_BUCKET",
			       "X-Scope-OrgID"};
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		CHECK(!ember__redact_is_secret_name(plain[i]));
	CHECK_EQ_STR(ember__redact_value("EMBERPROF_SAMPLE_RATE", "abc", b, sizeof(b)), "abc");
	CHECK_EQ_STR(ember__redact_value("EMBERPROF_SERVER_URL", "http://u:p@h", b, sizeof(b)),
		     "http://<hidden>@h");
	CHECK_EQ_STR(ember__redact_header("X-Key: s3cr3t", b, sizeof(b)), "X-Key: <hidden>");
	CHECK_EQ_STR(ember__redact_header("Authorization Bearer s3cr3t", b, sizeof(b)), "<hidden>");
	CHECK_EQ_STR(ember__redact_header("s3cr3t", b, sizeof(b)), "<hidden>");
}

static char *temp_dir(char *d)
{
	strcpy(d, "/tmp/ember-host-XXXXXX");
	return mkdtemp(d);
}

static int count_entries(const char *dir)
{
	return check_count_dir(dir, NULL);
}

#define rm_rf check_rm_rf

static void test_ownfd(void)
{
	char d1[64], d2[64];
	CHECK(temp_dir(d1) && temp_dir(d2));
	ember__ownfd o = EMBER_OWNFD_NONE;
	int fd = ember__ownfd_adopt(&o, open(d1, O_RDONLY | O_DIRECTORY));
	CHECK(fd >= EMBER_OWNFD_MIN);
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	CHECK_EQ_INT(ember__ownfd_check(&o), 1);
	/* The program closes it and puts a directory of its own there. */
	int theirs = open(d2, O_RDONLY | O_DIRECTORY);
	CHECK_EQ_INT(dup2(theirs, fd), fd);
	CHECK_EQ_INT(ember__ownfd_check(&o), 0);
	CHECK_EQ_INT(o.fd, -1);
	ember__ownfd_close(&o);
	CHECK(fcntl(fd, F_GETFD) >= 0); /* not closed: it is theirs */
	/* The same directory at the same number, without FD_CLOEXEC: not ours. */
	o = (ember__ownfd)EMBER_OWNFD_NONE;
	fd = ember__ownfd_adopt(&o, open(d1, O_RDONLY | O_DIRECTORY));
	int same = open(d1, O_RDONLY | O_DIRECTORY);
	CHECK_EQ_INT(dup2(same, fd), fd);
	CHECK_EQ_INT(ember__ownfd_check(&o), 0);
	close(fd);
	close(same);
	close(theirs);
	rm_rf(d1);
	rm_rf(d2);
}

/* Every descriptor from `from` up closed, then `trap` put at each number
 * the agent held (as host_closefds does). */
static void take_numbers(int lo, int hi, const char *trap)
{
	int t = open(trap, O_RDONLY | O_DIRECTORY);
	for (int fd = lo; fd <= hi; fd++)
		if (fd != t)
			dup2(t, fd);
	close(t);
}

static ember__upload_item *item(uint32_t seq)
{
	uint8_t *b = malloc(4);
	memcpy(b, "body", 4);
	return ember__upload_item_new(1, seq, seq, seq + 1, "m", b, 4);
}

static void test_spool_survives_closed_descriptors(void)
{
	char sp[64], trap[64];
	CHECK(temp_dir(sp) && temp_dir(trap));
	ember__spool *s = NULL;
	CHECK_EQ_INT(ember__spool_open(&s, sp, 1 << 20), 0);
	unsigned ev = 0;
	ember__upload_item *it = item(0);
	CHECK_EQ_INT(ember__spool_put(s, it, NULL, &ev), 0);
	ember__upload_item_free(it);
	take_numbers(EMBER_OWNFD_MIN, EMBER_OWNFD_MIN + 7, trap);
	it = item(1);
	CHECK_EQ_INT(ember__spool_put(s, it, NULL, &ev), 0);
	ember__upload_item_free(it);
	CHECK_EQ_INT(ember__spool_reopens(s), 2); /* directory and lock */
	CHECK_EQ_INT(ember__spool_count(s), 2);
	CHECK_EQ_INT(count_entries(trap), 0); /* nothing written into theirs */
	CHECK_EQ_INT(count_entries(sp), 3);   /* .lock and 2 windows */
	ember__upload_item *back = NULL;
	CHECK_EQ_INT(ember__spool_load_oldest(s, &back), 0);
	CHECK(back && back->seq == 0);
	ember__upload_item_free(back);
	ember__spool_close(s);
	for (int fd = EMBER_OWNFD_MIN; fd <= EMBER_OWNFD_MIN + 7; fd++) {
		CHECK(fcntl(fd, F_GETFD) >= 0); /* still theirs, never closed */
		close(fd);
	}
	rm_rf(sp);
	rm_rf(trap);
}

static void test_local_reporter_survives_closed_descriptors(void)
{
	char out[64], trap[64];
	CHECK(temp_dir(out) && temp_dir(trap));
	ember_reporter r;
	CHECK_EQ_INT(ember_reporter_local(&r, out), 0);
	take_numbers(EMBER_OWNFD_MIN, EMBER_OWNFD_MIN + 7, trap);
	static const uint8_t data[] = "pprof";
	ember_report rep = {.app_name = "app", .start_ns = 1, .end_ns = 2, .seq = 0,
			    .profile_type = "cpu", .pprof = data, .pprof_len = sizeof(data)};
	CHECK_EQ_INT(r.report(r.userdata, &rep), 0);
	ember_stats st = {0};
	r.stats(r.userdata, &st);
	CHECK_EQ_INT(st.fds_reopened, 1);
	CHECK_EQ_INT(count_entries(out), 1);
	CHECK_EQ_INT(count_entries(trap), 0);
	r.destroy(r.userdata);
	for (int fd = EMBER_OWNFD_MIN; fd <= EMBER_OWNFD_MIN + 7; fd++) {
		CHECK(fcntl(fd, F_GETFD) >= 0);
		close(fd);
	}
	rm_rf(out);
	rm_rf(trap);
}

int main(void)
{
	RUN(test_redact_url);
	RUN(test_redact_names_and_values);
	RUN(test_ownfd);
	RUN(test_spool_survives_closed_descriptors);
	RUN(test_local_reporter_survives_closed_descriptors);
	return CHECK_DONE();
}
