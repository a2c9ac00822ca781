/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline.c - the upload pipeline's logic with a scripted send
 * function and no network: delivery order, retries, Retry-After,
 * permanent failures, queue overflow with and without a spool, the spool
 * surviving a restart, its size bound, corrupt files, the spool lock,
 * cancellation at shutdown, jitter and the flush.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "upload/pipeline.h"
#include "upload/spool.h"

typedef struct fake_send {
	pthread_mutex_t mu;
	int script[64];     /* outcome of each call, in order */
	int nscript, pos;
	int def;            /* outcome once the script is used up */
	int64_t retry_after;
	_Atomic int block; /* 1: hold each call until cleared or cancelled (read by the uploader) */
	uint32_t attempts[256];
	double attempt_t[256];
	int nattempts;
	uint32_t ok[256];   /* seq of delivered items, in order */
	int nok;
	int bad_body;       /* an item's body did not match its seq */
	int down;           /* retryable failures are refused connections */
	int too_old;        /* PERMANENT answers say "too old" (the server's age limit) */
} fake_send;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void nap_ms(int ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&t, NULL);
}

static void fake_send_fn(void *ctx, const ember__upload_item *it, const _Atomic int *cancel,
			 ember__send_result *res)
{
	fake_send *f = ctx;
	pthread_mutex_lock(&f->mu);
	if (f->nattempts < 256) {
		f->attempts[f->nattempts] = it->seq;
		f->attempt_t[f->nattempts++] = now_s();
	}
	pthread_mutex_unlock(&f->mu);
	while (f->block && !atomic_load(cancel))
		nap_ms(1);
	pthread_mutex_lock(&f->mu);
	char want[64];
	snprintf(want, sizeof(want), "body-%u", it->seq);
	if (it->len != strlen(want) || memcmp(it->body, want, it->len) ||
	    strcmp(it->meta, "meta") || it->kind != 7 || it->start_ns != (int64_t)it->seq * 1000)
		f->bad_body = 1;
	int out = atomic_load(cancel) ? EMBER__SEND_RETRY : f->pos < f->nscript ? f->script[f->pos++]
										 : f->def;
	res->outcome = out;
	res->too_old = out == EMBER__SEND_PERMANENT && f->too_old;
	res->retry_after_ms = out == EMBER__SEND_RETRY ? f->retry_after : -1;
	res->server_down = out == EMBER__SEND_RETRY && f->down && !atomic_load(cancel);
	snprintf(res->message, sizeof(res->message), "scripted %d", out);
	if (out == EMBER__SEND_OK && f->nok < 256)
		f->ok[f->nok++] = it->seq;
	pthread_mutex_unlock(&f->mu);
}

/* The attempts so far, read under the fake's lock: the uploader may be
 * sending (retrying) meanwhile. */
static int attempts_now(fake_send *f)
{
	pthread_mutex_lock(&f->mu);
	int n = f->nattempts;
	pthread_mutex_unlock(&f->mu);
	return n;
}

static void fake_init(fake_send *f, int def)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	f->def = def;
	f->retry_after = -1;
}

static ember__upload_item *item(uint32_t seq)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "body-%u", seq);
	uint8_t *b = malloc((size_t)n);
	memcpy(b, body, (size_t)n);
	return ember__upload_item_new(7, seq, (int64_t)seq * 1000, (int64_t)seq * 1000 + 999, "meta", b,
				      (size_t)n);
}

static ember__upload_log quiet = {NULL, NULL, EMBER_LOG_OFF, "test"};

static uint64_t max_age_ms; /* make()'s max_age_ms, 0 for most tests */

static ember__pipeline *make(fake_send *f, unsigned qlen, const char *spool, uint64_t max,
			     unsigned jitter)
{
	ember__pipeline_opts o = {
		.name = "test",
		.queue_len = qlen,
		.spool_dir = spool,
		.spool_max_bytes = max,
		.jitter_ms = jitter,
		.backoff_base_ms = 1,
		.backoff_max_ms = 4,
		.send = fake_send_fn,
		.send_ctx = f,
		.max_age_ms = max_age_ms,
		.max_age_what = "test",
	};
	ember__pipeline *p = NULL;
	CHECK_EQ_INT(ember__pipeline_new(&p, &o), 0);
	return p;
}

static int seq_is(const fake_send *f, const uint32_t *want, int n)
{
	if (f->nok != n)
		return 0;
	for (int i = 0; i < n; i++)
		if (f->ok[i] != want[i])
			return 0;
	return 1;
}

static char *temp_dir(void)
{
	static char dirs[16][64];
	static int k;
	char *d = dirs[k++ % 16];
	snprintf(d, 64, "/tmp/ember-pipe-XXXXXX");
	return mkdtemp(d);
}

static int count_files(const char *dir)
{
	return check_count_dir(dir, EMBER_SPOOL_SUFFIX);
}

#define rm_rf check_rm_rf

/* ---- tests ---- */

static void test_order_and_retries(void)
{
	fake_send f;
	fake_init(&f, EMBER__SEND_OK);
	int script[] = {EMBER__SEND_RETRY, EMBER__SEND_RETRY, EMBER__SEND_OK, EMBER__SEND_OK,
			EMBER__SEND_RETRY};
	memcpy(f.script, script, sizeof(script));
	f.nscript = 5;
	ember__pipeline *p = make(&f, 8, NULL, 0, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	for (uint32_t i = 0; i < 5; i++)
		ember__pipeline_enqueue(p, item(i));
	CHECK_EQ_INT(ember__pipeline_flush(p, 10000), 0);
	uint32_t want[] = {0, 1, 2, 3, 4};
	CHECK(seq_is(&f, want, 5));
	/* Window 0 was tried three times before window 1 was touched. */
	CHECK_EQ_INT(f.attempts[0], 0);
	CHECK_EQ_INT(f.attempts[1], 0);
	CHECK_EQ_INT(f.attempts[2], 0);
	CHECK_EQ_INT(f.attempts[3], 1);
	ember_stats st = {0};
	ember__pipeline_stats(p, &st);
	CHECK_EQ_INT(st.uploads_ok, 5);
	CHECK_EQ_INT(st.uploads_retried, 3);
	CHECK_EQ_INT(st.uploads_failed, 0);
	CHECK_EQ_INT(st.bytes_sent, 5 * strlen("body-0"));
	CHECK(!f.bad_body);
	ember__pipeline_free(p);
}

static void test_permanent_dropped(void)
{
	fake_send f;
	fake_init(&f, EMBER__SEND_OK);
	f.script[0] = EMBER__SEND_PERMANENT;
	f.nscript = 1;
	ember__pipeline *p = make(&f, 8, NULL, 0, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	for (uint32_t i = 0; i < 3; i++)
		ember__pipeline_enqueue(p, item(i));
	CHECK_EQ_INT(ember__pipeline_flush(p, 10000), 0);
	uint32_t want[] = {1, 2};
	CHECK(seq_is(&f, want, 2));
	CHECK_EQ_INT(f.nattempts, 3); /* not retried */
	ember_stats st = {0};
	ember__pipeline_stats(p, &st);
	CHECK_EQ_INT(st.uploads_failed, 1);
	CHECK_EQ_INT(st.uploads_retried, 0);
	ember__pipeline_free(p);
}

static void test_retry_after(void)
{
	fake_send f;
	fake_init(&f, EMBER__SEND_OK);
	f.script[0] = EMBER__SEND_RETRY;
	f.nscript = 1;
	f.retry_after = 200;
	ember__pipeline *p = make(&f, 8, NULL, 0, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	ember__pipeline_enqueue(p, item(0));
	CHECK_EQ_INT(ember__pipeline_flush(p, 10000), 0);
	CHECK_EQ_INT(f.nattempts, 2);
	/* Not before the server said: a lower bound, which cannot be flaky. */
	CHECK(f.attempt_t[1] - f.attempt_t[0] >= 0.2);
	ember__pipeline_free(p);
}

static void wait_in_flight(fake_send *f)
{
	for (;;) {
		pthread_mutex_lock(&f->mu);
		int n = f->nattempts;
		pthread_mutex_unlock(&f->mu);
		if (n)
			return;
		nap_ms(1);
	}
}

static void test_overflow_without_spool(void)
{
	fake_send f;
	fake_init(&f, EMBER__SEND_OK);
	f.block = 1;
	ember__pipeline *p = make(&f, 3, NULL, 0, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	ember__pipeline_enqueue(p, item(0));
	wait_in_flight(&f);
	for (uint32_t i = 1; i <= 6; i++)
		ember__pipeline_enqueue(p, item(i));
	ember_stats st = {0};
	ember__pipeline_stats(p, &st);
	CHECK_EQ_INT(st.uploads_dropped, 3); /* 1, 2, 3: the oldest queued */
	f.block = 0;
	CHECK_EQ_INT(ember__pipeline_flush(p, 10000), 0);
	uint32_t want[] = {0, 4, 5, 6};
	CHECK(seq_is(&f, want, 4));
	ember__pipeline_free(p);
}

static void test_overflow_to_spool(void)
{
	char *dir = temp_dir();
	fake_send f;
	fake_init(&f, EMBER__SEND_OK);
	f.block = 1;
	ember__pipeline *p = make(&f, 3, dir, 1 << 20, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	ember__pipeline_enqueue(p, item(0));
	wait_in_flight(&f);
	for (uint32_t i = 1; i <= 6; i++)
		ember__pipeline_enqueue(p, item(i));
	CHECK_EQ_INT(count_files(dir), 3);
	ember_stats st = {0};
	ember__pipeline_stats(p, &st);
	CHECK_EQ_INT(st.uploads_spooled, 3);
	CHECK_EQ_INT(st.uploads_dropped, 0);
	f.block = 0;
	CHECK_EQ_INT(ember__pipeline_flush(p, 10000), 0);
	uint32_t want[] = {0, 1, 2, 3, 4, 5, 6}; /* the spool before the queue */
	CHECK(seq_is(&f, want, 7));
	CHECK_EQ_INT(count_files(dir), 0);
	CHECK(!f.bad_body);
	ember__pipeline_free(p);
	rm_rf(dir);
}

static void test_spool_survives_restart(void)
{
	char *dir = temp_dir();
	fake_send down;
	fake_init(&down, EMBER__SEND_RETRY);
	ember__pipeline *p = make(&down, 16, dir, 1 << 20, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	for (uint32_t i = 0; i < 5; i++)
		ember__pipeline_enqueue(p, item(i));
	CHECK_EQ_INT(ember__pipeline_flush(p, 50), 5);
	ember__pipeline_free(p); /* the "application" exits */
	CHECK_EQ_INT(count_files(dir), 5);

	fake_send up;
	fake_init(&up, EMBER__SEND_OK);
	p = make(&up, 16, dir, 1 << 20, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	ember__pipeline_enqueue(p, item(5)); /* a window of the new run */
	CHECK_EQ_INT(ember__pipeline_flush(p, 10000), 0);
	uint32_t want[] = {0, 1, 2, 3, 4, 5};
	CHECK(seq_is(&up, want, 6));
	CHECK(!up.bad_body); /* kind, seq, times, meta and body survived */
	CHECK_EQ_INT(count_files(dir), 0);
	ember__pipeline_free(p);
	rm_rf(dir);
}

static void test_spool_bound(void)
{
	char *dir = temp_dir();
	fake_send f;
	fake_init(&f, EMBER__SEND_OK);
	f.block = 1;
	/* Each file is a 52-byte header + "meta" + "body-N": 62 bytes. */
	ember__pipeline *p = make(&f, 1, dir, 3 * 62, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	ember__pipeline_enqueue(p, item(0));
	wait_in_flight(&f);
	for (uint32_t i = 1; i <= 6; i++)
		ember__pipeline_enqueue(p, item(i));
	/* 1..5 overflowed to a spool holding 3: 1 and 2 were dropped. */
	CHECK_EQ_INT(count_files(dir), 3);
	ember_stats st = {0};
	ember__pipeline_stats(p, &st);
	CHECK_EQ_INT(st.uploads_spooled, 5);
	CHECK_EQ_INT(st.uploads_dropped, 2);
	f.block = 0;
	CHECK_EQ_INT(ember__pipeline_flush(p, 10000), 0);
	uint32_t want[] = {0, 3, 4, 5, 6};
	CHECK(seq_is(&f, want, 5));
	ember__pipeline_free(p);
	rm_rf(dir);
}

static void test_corrupt_spool_file(void)
{
	char *dir = temp_dir();
	fake_send down;
	fake_init(&down, EMBER__SEND_RETRY);
	ember__pipeline *p = make(&down, 4, dir, 1 << 20, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	ember__pipeline_enqueue(p, item(1));
	ember__pipeline_enqueue(p, item(2));
	ember__pipeline_free(p);
	/* A torn file that sorts first, and a file whose payload was damaged. */
	char path[256];
	snprintf(path, sizeof(path), "%s/00000000000000000000-0000000000-1-0.ems", dir);
	int fd = open(path, O_WRONLY | O_CREAT, 0600);
	CHECK(fd >= 0 && write(fd, "EMBSPOOL", 8) == 8);
	close(fd);
	DIR *d = opendir(dir);
	struct dirent *de;
	char victim[512] = "";
	while ((de = readdir(d)))
		if (strstr(de->d_name, "-0000000002-"))
			snprintf(victim, sizeof(victim), "%s/%s", dir, de->d_name);
	closedir(d);
	fd = open(victim, O_WRONLY);
	CHECK(fd >= 0);
	CHECK(lseek(fd, -1, SEEK_END) > 0 && write(fd, "X", 1) == 1);
	close(fd);

	fake_send up;
	fake_init(&up, EMBER__SEND_OK);
	p = make(&up, 4, dir, 1 << 20, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	CHECK_EQ_INT(ember__pipeline_flush(p, 10000), 0);
	uint32_t want[] = {1};
	CHECK(seq_is(&up, want, 1));
	ember_stats st = {0};
	ember__pipeline_stats(p, &st);
	CHECK_EQ_INT(st.uploads_dropped, 2);
	CHECK_EQ_INT(count_files(dir), 0);
	ember__pipeline_free(p);
	rm_rf(dir);
}

static void test_spool_lock(void)
{
	char *dir = temp_dir();
	fake_send f1, f2;
	fake_init(&f1, EMBER__SEND_RETRY);
	fake_init(&f2, EMBER__SEND_RETRY);
	ember__pipeline *a = make(&f1, 4, dir, 1 << 20, 0);
	ember__pipeline *b = make(&f2, 4, dir, 1 << 20, 0); /* locked out: no spool */
	CHECK_EQ_INT(ember__pipeline_start(a, &quiet), 0);
	CHECK_EQ_INT(ember__pipeline_start(b, &quiet), 0);
	ember__pipeline_enqueue(b, item(9));
	ember__pipeline_free(b);
	CHECK_EQ_INT(count_files(dir), 0); /* b could not spool: dropped */
	ember__pipeline_enqueue(a, item(1));
	ember__pipeline_free(a);
	CHECK_EQ_INT(count_files(dir), 1);
	rm_rf(dir);
}

static void test_cancel_at_shutdown(void)
{
	char *dir = temp_dir();
	fake_send f;
	fake_init(&f, EMBER__SEND_OK);
	f.block = 1; /* a server that never answers */
	ember__pipeline *p = make(&f, 4, dir, 1 << 20, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	ember__pipeline_enqueue(p, item(0));
	ember__pipeline_enqueue(p, item(1));
	wait_in_flight(&f);
	CHECK_EQ_INT(ember__pipeline_flush(p, 20), 2);
	ember__pipeline_free(p); /* must return: the send sees the cancel */
	CHECK_EQ_INT(count_files(dir), 2);
	rm_rf(dir);
}

static void test_jitter_keeps_order(void)
{
	fake_send f;
	fake_init(&f, EMBER__SEND_OK);
	ember__pipeline *p = make(&f, 16, NULL, 0, 30);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	for (uint32_t i = 0; i < 10; i++) {
		ember__pipeline_enqueue(p, item(i));
		nap_ms(5);
	}
	CHECK_EQ_INT(ember__pipeline_flush(p, 10000), 0);
	uint32_t want[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	CHECK(seq_is(&f, want, 10));
	ember__pipeline_free(p);
}

/*
 * Windows older than the server accepts (their start is in 1970 here) are
 * dropped unsent and counted as expired, from the queue and from a spool
 * left by an earlier run; the files go; nothing is re-dated or blocked.
 */
static void test_max_age(void)
{
	char *dir = temp_dir();
	fake_send down;
	fake_init(&down, EMBER__SEND_RETRY);
	ember__pipeline *p = make(&down, 16, dir, 1 << 20, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	for (uint32_t i = 1; i < 4; i++) /* (item 0 starts at 0: "unknown", never expires) */
		ember__pipeline_enqueue(p, item(i));
	CHECK_EQ_INT(ember__pipeline_flush(p, 50), 3);
	ember__pipeline_free(p);
	CHECK_EQ_INT(count_files(dir), 3);

	fake_send up;
	fake_init(&up, EMBER__SEND_OK);
	max_age_ms = 3600 * 1000;
	p = make(&up, 16, dir, 1 << 20, 0);
	max_age_ms = 0;
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	ember__pipeline_enqueue(p, item(4));
	CHECK_EQ_INT(ember__pipeline_flush(p, 10000), 0);
	CHECK_EQ_INT(up.nattempts, 0); /* none was sent */
	ember_stats st = {0};
	ember__pipeline_stats(p, &st);
	CHECK_EQ_INT(st.uploads_expired, 4);
	CHECK_EQ_INT(st.uploads_failed, 0);
	CHECK_EQ_INT(st.uploads_dropped, 0);
	CHECK_EQ_INT(count_files(dir), 0);
	ember__pipeline_free(p);
	rm_rf(dir);
}

/* A refusal for age (the server's 400) is counted as expired, not failed,
 * and the windows behind it go on. */
static void test_refused_as_too_old(void)
{
	fake_send f;
	fake_init(&f, EMBER__SEND_OK);
	f.script[0] = EMBER__SEND_PERMANENT;
	f.script[1] = EMBER__SEND_PERMANENT;
	f.nscript = 2;
	f.too_old = 1;
	ember__pipeline *p = make(&f, 8, NULL, 0, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	for (uint32_t i = 0; i < 4; i++)
		ember__pipeline_enqueue(p, item(i));
	CHECK_EQ_INT(ember__pipeline_flush(p, 10000), 0);
	uint32_t want[] = {2, 3};
	CHECK(seq_is(&f, want, 2));
	ember_stats st = {0};
	ember__pipeline_stats(p, &st);
	CHECK_EQ_INT(st.uploads_expired, 2);
	CHECK_EQ_INT(st.uploads_failed, 0);
	ember__pipeline_free(p);
}

static void test_bad_options(void)
{
	ember__pipeline *p = NULL;
	ember__pipeline_opts o = {.queue_len = 0, .send = fake_send_fn};
	CHECK_EQ_INT(ember__pipeline_new(&p, &o), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "queue length"));
	o.queue_len = 4;
	o.send = NULL;
	CHECK_EQ_INT(ember__pipeline_new(&p, &o), EMBER_ERR_INVALID);
	o.send = fake_send_fn;
	o.spool_dir = "/proc/self/nope/spool";
	o.spool_max_bytes = 1 << 20;
	CHECK(ember__pipeline_new(&p, &o) < 0);
	CHECK(strstr(ember_last_error(), "/proc/self/nope"));
	CHECK(p == NULL);
}

/*
 * A refused connection: the window goes to the spool at once,
 * and the final flush returns without waiting for a server known to be
 * down. A 10 min flush timeout: waiting for it would hang the test.
 */
static void test_refused_spools_at_once(void)
{
	fake_send f;
	fake_init(&f, EMBER__SEND_RETRY);
	f.down = 1;
	char *dir = temp_dir();
	ember__pipeline *p = make(&f, 4, dir, 1 << 20, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	CHECK_EQ_INT(ember__pipeline_submit(p, item(0), 1, 600000, &quiet), 0);
	CHECK_EQ_INT(ember__pipeline_server_down(p), 1);
	CHECK(attempts_now(&f) >= 1);
	CHECK_EQ_INT(count_files(dir), 1); /* spooled before the flush returned */
	ember_stats st = {0};
	ember__pipeline_stats(p, &st);
	CHECK_EQ_INT(st.uploads_spooled, 1);
	ember__pipeline_free(p);
	CHECK_EQ_INT(count_files(dir), 1); /* still there for the next run */
	rm_rf(dir);
}

/* The same without a spool: not waited for, dropped and counted at shutdown. */
static void test_refused_without_spool(void)
{
	fake_send f;
	fake_init(&f, EMBER__SEND_RETRY);
	f.down = 1;
	ember__pipeline *p = make(&f, 4, NULL, 0, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	ember__pipeline_enqueue(p, item(0));
	CHECK_EQ_INT(ember__pipeline_flush(p, 600000), 1);
	CHECK_EQ_INT(ember__pipeline_server_down(p), 1);
	ember_stats st = {0};
	ember__pipeline_stats(p, &st);
	CHECK_EQ_INT(st.uploads_dropped, 0);
	ember__pipeline_free(p);
}

/* A reachable but slow server is not "down": the flush waits its timeout
 * (the request is still in flight when it returns). */
static void test_slow_server_gets_the_flush_timeout(void)
{
	fake_send f;
	fake_init(&f, EMBER__SEND_OK);
	f.block = 1;
	ember__pipeline *p = make(&f, 4, NULL, 0, 0);
	CHECK_EQ_INT(ember__pipeline_start(p, &quiet), 0);
	ember__pipeline_enqueue(p, item(0));
	wait_in_flight(&f); /* the request is in flight */
	CHECK_EQ_INT(ember__pipeline_flush(p, 300), 1);
	CHECK_EQ_INT(ember__pipeline_server_down(p), 0);
	CHECK_EQ_INT(f.nattempts, 1);
	CHECK_EQ_INT(f.nok, 0);
	ember__pipeline_free(p); /* cancels the request */
}

int main(void)
{
	RUN(test_order_and_retries);
	RUN(test_permanent_dropped);
	RUN(test_retry_after);
	RUN(test_overflow_without_spool);
	RUN(test_overflow_to_spool);
	RUN(test_spool_survives_restart);
	RUN(test_spool_bound);
	RUN(test_corrupt_spool_file);
	RUN(test_spool_lock);
	RUN(test_cancel_at_shutdown);
	RUN(test_jitter_keeps_order);
	RUN(test_bad_options);
	RUN(test_refused_spools_at_once);
	RUN(test_refused_without_spool);
	RUN(test_slow_server_gets_the_flush_timeout);
	RUN(test_max_age);
	RUN(test_refused_as_too_old);
	return CHECK_DONE();
}
