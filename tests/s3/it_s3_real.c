/* SPDX-License-Identifier: Apache-2.0 */
/*
 * it_s3_real.c - the S3 reporter against a real S3 implementation: npm
 * s3rver behind sigv4_front.js, which re-computes each request's
 * Signature V4 with AWS's own signer and rejects mismatches.
 *
 * A real JFR recording (made by the JDK: java -XX:StartFlightRecording)
 * is handed to report() as the agent hands its windows; then the test,
 * as an S3 client of its own (libcurl SigV4), lists the bucket, downloads
 * the zip, checks entry names, order and compression with libzip, parses
 * metadata.json, and runs `jfr summary` on the JFR inside. Then a wrong
 * secret, a tampered header and a tampered body must be rejected by the
 * front and counted by the reporter, and a window sent during an outage
 * (the front answering 503) must arrive once it ends.
 */
#include "s3_front.h"

static int64_t report_start_ms;

static void report_window(ember_reporter *r, const uint8_t *jfr, size_t len, uint32_t seq)
{
	report_start_ms = st_report(r, jfr, len, seq, 0) / 1000000;
}

/* One window that the front must refuse; returns after the reporter gave up. */
static void expect_rejected(ember_reporter *r, const uint8_t *jfr, size_t len, const char *code,
			    const char *what)
{
	json_t *s0 = front_stats();
	long long rej0 = st_json_int(s0, "rejected");
	json_decref(s0);
	ember_stats before = st_stats(r);
	st_log_clear();
	report_window(r, jfr, len, 7);
	ember_stats s = st_wait_done(r, before.uploads_ok + before.uploads_failed + 1, 60);
	ST_CHECK(s.uploads_failed == before.uploads_failed + 1 && s.uploads_ok == before.uploads_ok,
		 "%s: not refused (ok %llu failed %llu)", what, (unsigned long long)s.uploads_ok,
		 (unsigned long long)s.uploads_failed);
	json_t *s1 = front_stats();
	ST_CHECK(st_json_int(s1, "rejected") == rej0 + 1, "%s: the front did not reject it", what);
	json_decref(s1);
	ST_CHECK(st_log_has(code), "%s: %s not logged", what, code);
	printf("ok   %s: rejected by the front (%s), counted as failed\n", what, code);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ember-s3real-XXXXXX");
	ST_CHECK(mkdtemp(tmpdir), "mkdtemp");
	curl_global_init(CURL_GLOBAL_DEFAULT);
	front_start();

	size_t jfr_len;
	uint8_t *jfr = make_jfr(&jfr_len);

	st_clear_aws_env();
	setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	setenv("HOME", tmpdir, 1);

	/* 1. delivered, listed, downloaded, read */
	ember_reporter r = make();
	report_window(&r, jfr, jfr_len, 0);
	ember_stats s = st_wait_done(&r, 1, 60);
	ST_CHECK(s.uploads_ok == 1, "the window was not stored (failed %llu)",
		 (unsigned long long)s.uploads_failed);
	ST_CHECK(s.bytes_sent > 0 && s.bytes_sent < jfr_len, "bytes_sent %llu: the zip should be "
		 "smaller than the JFR", (unsigned long long)s.bytes_sent);
	char keys[8][512];
	int n = list_keys(keys, 8);
	ST_CHECK(n == 1, "%d objects in the bucket", n);
	char want[128];
	snprintf(want, sizeof(want), "profile_pg_onprem___%ld_", (long)getpid());
	ST_CHECK(!strncmp(keys[0], want, strlen(want)), "key %s", keys[0]);
	check_object(keys[0], jfr, jfr_len, report_start_ms);

	/* 2. outage: the front answers 503 three times, then the window arrives */
	front_ctl("fail?status=503&code=ServiceUnavailable&n=3");
	report_window(&r, jfr, jfr_len, 1);
	s = st_wait_done(&r, 2, 120);
	ST_CHECK(s.uploads_ok == 2 && s.uploads_retried == 3, "after the outage: ok %llu retried %llu",
		 (unsigned long long)s.uploads_ok, (unsigned long long)s.uploads_retried);
	ST_CHECK(list_keys(keys, 8) == 2, "the window sent during the outage is not in the bucket");
	printf("ok   outage (3 x 503): retried 3 times, then stored\n");

	/* 3. a clock S3 finds skewed: credentials fetched again, retried, stored */
	front_ctl("fail?status=403&code=RequestTimeTooSkewed&n=1");
	report_window(&r, jfr, jfr_len, 2);
	s = st_wait_done(&r, 3, 120);
	uint64_t refreshes;
	ember__s3_counters(r.userdata, NULL, NULL, &refreshes);
	ST_CHECK(s.uploads_ok == 3 && refreshes == 1, "RequestTimeTooSkewed: ok %llu, refreshes %llu",
		 (unsigned long long)s.uploads_ok, (unsigned long long)refreshes);
	ST_CHECK(list_keys(keys, 8) == 3, "the window retried after RequestTimeTooSkewed is missing");
	printf("ok   RequestTimeTooSkewed: credentials refreshed, retried, stored\n");

	/* 4. a tampered header and a tampered body */
	front_ctl("tamper?what=header");
	expect_rejected(&r, jfr, jfr_len, "SignatureDoesNotMatch", "tampered header");
	front_ctl("tamper?what=body");
	expect_rejected(&r, jfr, jfr_len, "SignatureDoesNotMatch", "tampered body");
	uint64_t auth;
	ember__s3_counters(r.userdata, NULL, &auth, NULL);
	/* the 403s: RequestTimeTooSkewed, then the two tampered requests */
	ST_CHECK(auth == 3, "auth failures %llu", (unsigned long long)auth);
	r.destroy(r.userdata);

	/* 5. a wrong secret */
	setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret", 1);
	r = make();
	expect_rejected(&r, jfr, jfr_len, "SignatureDoesNotMatch", "wrong secret");
	ST_CHECK(st_log_has("credentials from the environment"), "the credentials' source is not "
		 "named");
	r.destroy(r.userdata);
	ST_CHECK(list_keys(keys, 8) == 3, "a refused window reached the bucket");

	/* 6. another account's bucket (x-amz-expected-bucket-owner) */
	setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
	ember_s3_options o = front_options();
	o.bucket_owner = "999999999999";
	ST_CHECK(ember_reporter_s3(&r, &o) == 0, "ember_reporter_s3: %s", ember_last_error());
	st_bind(&r);
	expect_rejected(&r, jfr, jfr_len, "AccessDenied", "wrong bucket owner");
	r.destroy(r.userdata);

	/* 7. an outage outlasting the reporter: the window waits in the spool
	 * and the next reporter on that spool delivers it */
	char spool[128];
	snprintf(spool, sizeof(spool), "%s/spool", tmpdir);
	o = front_options();
	o.spool_dir = spool;
	/* Keys are unique per reporter; earlier reporters of this test may
	 * have taken this second already under group "pg". */
	o.profiling_group = "pg-spool";
	front_ctl("fail?status=503&code=ServiceUnavailable&n=1000");
	ST_CHECK(ember_reporter_s3(&r, &o) == 0, "ember_reporter_s3: %s", ember_last_error());
	st_bind(&r);
	report_window(&r, jfr, jfr_len, 9);
	double deadline = st_now() + 60;
	while (st_stats(&r).uploads_retried < 1 && st_now() < deadline)
		st_sleep(0.05);
	ST_CHECK(st_stats(&r).uploads_retried >= 1, "no attempt during the outage");
	r.destroy(r.userdata); /* spools the window */
	front_ctl("fail?status=503&code=ServiceUnavailable&n=0");
	ST_CHECK(ember_reporter_s3(&r, &o) == 0, "ember_reporter_s3: %s", ember_last_error());
	st_bind(&r); /* starts the uploader: the spool goes first */
	s = st_wait_done(&r, 1, 60);
	ST_CHECK(s.uploads_ok == 1, "the spooled window was not delivered");
	r.destroy(r.userdata);
	ST_CHECK(list_keys(keys, 8) == 4, "the spooled window is not in the bucket");
	printf("ok   a window spooled during an outage is delivered by the next reporter\n");

	free(jfr);
	st_remove_dir(tmpdir);
	printf("it_s3_real: all passed\n");
	return 0;
}
