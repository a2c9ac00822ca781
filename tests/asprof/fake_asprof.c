/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_asprof.c - a stand-in libasyncProfiler.so for the tests of the
 * async-profiler backend. It implements async-profiler's C API (asprof.h)
 * the way the real library behaves as far as emberprof can see:
 *
 *  - asprof_execute("start,...,file=P,...") opens P for writing
 *    (O_CREAT | O_TRUNC, as async-profiler does) and refuses a second
 *    start ("Profiler already started"); "stop" writes a small, valid JFR
 *    recording (one event type, emberprof.FakeWindow{startTime, window,
 *    message}, readable by the JDK's `jfr` tool) into the file opened at
 *    start and refuses when not running ("Profiler is not active"); any
 *    other command is refused;
 *  - every call is appended to the file named by FAKE_ASPROF_LOG, one line
 *    each: "init", "exec <command>", "open <path> ino=<inode>",
 *    (with target=<where the path leads, per readlink>),
 *    "wrote window=<n> bytes=<b> ino=<inode>" (and, per dump, "dumped
 *    window=<n> bytes=<b> at=<offset>"), "register <name>",
 *    "emit <key> <len>";
 *  - failures on demand: FAKE_ASPROF_FAIL_START / _STOP / _EXECUTE hold a
 *    comma-separated list of the call numbers (1-based, per kind) to fail,
 *    or "all"; a failed stop still ends the recording but writes nothing.
 *    FAKE_ASPROF_ERROR_STR_NULL=1 makes asprof_error_str return NULL;
 *    FAKE_ASPROF_NO_DUMP=1 refuses "dump,jfr" (an unknown command);
 *    FAKE_ASPROF_BAD_JFR (the same list, of stops) writes a few bytes that
 *    are not a JFR recording instead.
 *
 * Built three times: complete, without the optional symbols
 * (FAKE_NO_OPTIONAL), and without the required asprof_error_str
 * (FAKE_NO_ERROR_STR).
 *
 * The recording's message is "window <n>: <start command>", so a test can
 * tell which window a report holds. fake_asprof_sample_here() (not part of
 * the real API) simulates a sample on the calling thread: it advances the
 * thread's sample_counter.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef void (*asprof_writer_t)(const char *buf, size_t size);
typedef struct {
	volatile uint64_t sample_counter;
} asprof_thread_local_data;

/* The API, as upstream's asprof.h declares it (and one test hook). */
EXPORT void asprof_init(void);
EXPORT const char *asprof_error_str(const char *err);
EXPORT const char *asprof_execute(const char *cmd, asprof_writer_t out);
EXPORT asprof_thread_local_data *asprof_get_thread_local_data(void);
EXPORT int asprof_register_jfr_event(const char *name);
EXPORT const char *asprof_emit_jfr_event(int key, const uint8_t *data, size_t len);
EXPORT void fake_asprof_sample_here(void);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int running, out_fd = -1;
static unsigned n_exec, n_start, n_stop;
static unsigned long long out_ino;
static char start_cmd[512];
static long long start_ns;
static unsigned long long interval_ns = 10000000, carry_ns, chunk_cpu_ns;
static off_t chunk_at;   /* where the chunk being written starts */
static unsigned n_chunk; /* chunks finished by a dump: windows number on across starts */

static unsigned long long cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Samples the chunk ending now holds; keeps the partial period in carry_ns. */
static unsigned long long take_samples(void)
{
	unsigned long long now = cpu_ns(), t = now - chunk_cpu_ns + carry_ns;
	chunk_cpu_ns = now;
	carry_ns = t % interval_ns;
	return t / interval_ns;
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void log_line(const char *fmt, ...)
{
	const char *path = getenv("FAKE_ASPROF_LOG");
	if (!path || !*path)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) < 0) {
			/* nothing to do: the test will miss the line */
		}
		close(fd);
	}
}

/* Whether call number n of this kind is to fail (env var: "all" or "1,3"). */
static int fail_nth(const char *var, unsigned n)
{
	const char *v = getenv(var);
	if (!v || !*v)
		return 0;
	if (!strcmp(v, "all"))
		return 1;
	for (const char *p = v; *p;) {
		char *end;
		unsigned long k = strtoul(p, &end, 10);
		if (end == p)
			return 0;
		if (k == n)
			return 1;
		p = *end == ',' ? end + 1 : end;
	}
	return 0;
}

/* ---- a minimal JFR chunk ---- */

typedef struct buf {
	uint8_t d[4096];
	size_t n;
} buf;

static void put(buf *b, const void *p, size_t n)
{
	if (b->n + n <= sizeof(b->d)) {
		memcpy(b->d + b->n, p, n);
		b->n += n;
	}
}

static void put_byte(buf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put_varint(buf *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;
		v >>= 7;
		put_byte(b, (uint8_t)(c | (v ? 0x80 : 0)));
	} while (v);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

/* An event: its size (4-byte padded varint, counting itself), then body. */
static void put_event(buf *out, const buf *body)
{
	uint32_t size = (uint32_t)body->n + 4;
	put_byte(out, (uint8_t)(0x80 | (size & 0x7f)));
	put_byte(out, (uint8_t)(0x80 | ((size >> 7) & 0x7f)));
	put_byte(out, (uint8_t)(0x80 | ((size >> 14) & 0x7f)));
	put_byte(out, (uint8_t)((size >> 21) & 0x7f));
	put(out, body->d, body->n);
}

/* The metadata's string pool, in index order. */
static const char *const strs[] = {
	"root", "metadata", "region", "class", "field", "name", "id", "superType",
	"long", "11", "int", "10", "java.lang.String", "20", "emberprof.FakeWindow", "100",
	"jdk.jfr.Event", "startTime", "window", "message", "locale", "en_US", "gmtOffset", "0",
};
enum { S_ROOT, S_METADATA, S_REGION, S_CLASS, S_FIELD, S_NAME, S_ID, S_SUPER, S_LONG, S_11,
       S_INT, S_10, S_STRING, S_20, S_EVENT, S_100, S_JDKEVENT, S_START, S_WINDOW, S_MESSAGE,
       S_LOCALE, S_EN, S_GMT, S_0, S_COUNT };

static void put_string(buf *b, const char *s)
{
	put_byte(b, 3); /* UTF-8 byte array */
	put_varint(b, strlen(s));
	put(b, s, strlen(s));
}

static void put_class(buf *b, int name, int id, int super, const int (*fields)[2], int nfields)
{
	put_varint(b, S_CLASS);
	put_varint(b, super >= 0 ? 3 : 2);
	put_varint(b, S_NAME), put_varint(b, (uint64_t)name);
	put_varint(b, S_ID), put_varint(b, (uint64_t)id);
	if (super >= 0)
		put_varint(b, S_SUPER), put_varint(b, (uint64_t)super);
	put_varint(b, (uint64_t)nfields);
	for (int i = 0; i < nfields; i++) {
		put_varint(b, S_FIELD);
		put_varint(b, 2);
		put_varint(b, S_NAME), put_varint(b, (uint64_t)fields[i][0]);
		put_varint(b, S_CLASS), put_varint(b, (uint64_t)fields[i][1]);
		put_varint(b, 0);
	}
}

/* Writes one chunk holding one FakeWindow event. Returns its length. */
static size_t make_jfr(buf *out, unsigned window, const char *message, long long t0, long long t1)
{
	static const int fields[3][2] = {{S_START, S_11}, {S_WINDOW, S_10}, {S_MESSAGE, S_20}};
	out->n = 68; /* header, filled in last */
	memset(out->d, 0, 68);
	buf ev = {.n = 0};
	put_varint(&ev, 100);
	put_varint(&ev, (uint64_t)t1); /* startTime, in ticks (ns since the epoch) */
	put_varint(&ev, window);
	put_string(&ev, message);
	put_event(out, &ev);

	size_t meta_off = out->n;
	buf md = {.n = 0};
	put_varint(&md, 0);              /* metadata event */
	put_varint(&md, (uint64_t)t1);   /* start time */
	put_varint(&md, 0);              /* duration */
	put_varint(&md, 1);              /* metadata id */
	put_varint(&md, S_COUNT);
	for (int i = 0; i < S_COUNT; i++)
		put_string(&md, strs[i]);
	put_varint(&md, S_ROOT);
	put_varint(&md, 0);
	put_varint(&md, 2);
	put_varint(&md, S_METADATA);
	put_varint(&md, 0);
	put_varint(&md, 4);
	put_class(&md, S_LONG, S_11, -1, NULL, 0);
	put_class(&md, S_INT, S_10, -1, NULL, 0);
	put_class(&md, S_STRING, S_20, -1, NULL, 0);
	put_class(&md, S_EVENT, S_100, S_JDKEVENT, fields, 3);
	put_varint(&md, S_REGION);
	put_varint(&md, 2);
	put_varint(&md, S_LOCALE), put_varint(&md, S_EN);
	put_varint(&md, S_GMT), put_varint(&md, S_0);
	put_varint(&md, 0);
	put_event(out, &md);

	size_t cp_off = out->n;
	buf cp = {.n = 0};
	put_varint(&cp, 1);            /* checkpoint event */
	put_varint(&cp, (uint64_t)t1); /* start time */
	put_varint(&cp, 0);            /* duration */
	put_varint(&cp, 0);            /* delta to the previous checkpoint: none */
	put_byte(&cp, 1);              /* flush */
	put_varint(&cp, 0);            /* no constant pools */
	put_event(out, &cp);

	uint8_t *h = out->d;
	memcpy(h, "FLR", 4);
	h[4] = 0, h[5] = 2, h[6] = 0, h[7] = 0; /* version 2.0 */
	put_be64(h + 8, out->n);
	put_be64(h + 16, cp_off);
	put_be64(h + 24, meta_off);
	put_be64(h + 32, (uint64_t)t0);      /* start, ns since the epoch */
	put_be64(h + 40, (uint64_t)(t1 - t0)); /* duration */
	put_be64(h + 48, (uint64_t)t0);      /* start ticks */
	put_be64(h + 56, 1000000000);        /* ticks per second */
	/* bytes 64..67: file state 0 (finished), flags 0 */
	return out->n;
}

/* ---- the C API ---- */

EXPORT void asprof_init(void)
{
	log_line("init");
}

#ifndef FAKE_NO_ERROR_STR
EXPORT const char *asprof_error_str(const char *err)
{
	const char *v = getenv("FAKE_ASPROF_ERROR_STR_NULL");
	if (v && !strcmp(v, "1"))
		return NULL;
	return err;
}
#endif

static const char *start(const char *cmd)
{
	n_start++;
	if (running)
		return "Profiler already started";
	if (fail_nth("FAKE_ASPROF_FAIL_START", n_start))
		return "fake: start failure injected";
	const char *f = strstr(cmd, ",file=");
	if (!f)
		return "fake: no file= in the start command";
	char path[256];
	size_t n = strcspn(f + 6, ",");
	if (n >= sizeof(path))
		return "fake: file name too long";
	memcpy(path, f + 6, n);
	path[n] = '\0';
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return "fake: cannot open the output file";
	struct stat st;
	fstat(fd, &st);
	out_fd = fd;
	out_ino = (unsigned long long)st.st_ino;
	char target[300];
	ssize_t tl = readlink(path, target, sizeof(target) - 1);
	target[tl > 0 ? tl : 0] = '\0';
	log_line("open %s ino=%llu target=%s", path, out_ino, target);
	snprintf(start_cmd, sizeof(start_cmd), "%s", cmd);
	start_ns = now_ns();
	const char *iv = strstr(cmd, ",interval=");
	interval_ns = iv ? strtoull(iv + 10, NULL, 10) : 0;
	if (!interval_ns)
		interval_ns = 10000000;
	carry_ns = 0; /* a start begins every period afresh */
	chunk_cpu_ns = cpu_ns();
	chunk_at = 0;
	running = 1;
	return NULL;
}

/* The chunk being written, finished: one FakeWindow event. Returns its length. */
static size_t finish_chunk(buf *b)
{
	char msg[700];
	unsigned long long n = take_samples();
	snprintf(msg, sizeof(msg), "window %u: %s samples=%llu", n_start + n_chunk, start_cmd, n);
	long long t1 = now_ns();
	size_t len = make_jfr(b, n_start + n_chunk, msg, start_ns, t1 > start_ns ? t1 : start_ns + 1);
	start_ns = t1;
	return len;
}

/* "dump,jfr": the chunk under way is finished in place and a new one begun. */
static const char *dump(void)
{
	if (!running)
		return "Profiler has not started";
	static buf b;
	size_t len = finish_chunk(&b);
	uint8_t next[68] = {'F', 'L', 'R', 0, 0, 2, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0}; /* 1 GiB, cpool 0 */
	ssize_t w = pwrite(out_fd, b.d, len, chunk_at);
	ssize_t w2 = pwrite(out_fd, next, sizeof(next), chunk_at + (off_t)len);
	log_line("dumped window=%u bytes=%zd at=%lld", n_start + n_chunk, w, (long long)chunk_at);
	chunk_at += (off_t)len;
	n_chunk++;
	return w == (ssize_t)len && w2 == (ssize_t)sizeof(next) ? NULL : "fake: cannot write the recording";
}

static const char *stop(void)
{
	n_stop++;
	if (!running)
		return "Profiler is not active";
	running = 0;
	int fd = out_fd;
	out_fd = -1;
	if (fail_nth("FAKE_ASPROF_FAIL_STOP", n_stop)) {
		close(fd);
		return "fake: stop failure injected";
	}
	static buf b;
	size_t len = finish_chunk(&b);
	if (fail_nth("FAKE_ASPROF_BAD_JFR", n_stop))
		len = (size_t)snprintf((char *)b.d, sizeof(b.d), "not a recording");
	ssize_t w = pwrite(fd, b.d, len, chunk_at);
	if (w == (ssize_t)len && ftruncate(fd, chunk_at + (off_t)len) != 0)
		w = -1;
	close(fd);
	log_line("wrote window=%u bytes=%zd ino=%llu", n_start + n_chunk, w, out_ino);
	carry_ns = 0; /* the periods under way end with the engines */
	return w == (ssize_t)len ? NULL : "fake: cannot write the recording";
}

EXPORT const char *asprof_execute(const char *cmd, asprof_writer_t out)
{
	pthread_mutex_lock(&mu);
	log_line("exec %s", cmd);
	const char *err;
	if (fail_nth("FAKE_ASPROF_FAIL_EXECUTE", ++n_exec))
		err = "fake: execute failure injected";
	else if (!strncmp(cmd, "start,", 6))
		err = start(cmd);
	else if (!strcmp(cmd, "stop"))
		err = stop();
	else if (!strcmp(cmd, "dump,jfr") && !getenv("FAKE_ASPROF_NO_DUMP"))
		err = dump();
	else
		err = "fake: unknown command";
	pthread_mutex_unlock(&mu);
	if (!err && out) {
		static const char text[] = "OK\n";
		out(text, sizeof(text) - 1);
	}
	return err;
}

#ifndef FAKE_NO_OPTIONAL
static unsigned n_events;
static __thread asprof_thread_local_data tld;

EXPORT asprof_thread_local_data *asprof_get_thread_local_data(void)
{
	return &tld;
}

EXPORT void fake_asprof_sample_here(void)
{
	tld.sample_counter += 1000;
}

EXPORT int asprof_register_jfr_event(const char *name)
{
	log_line("register %s", name);
	if (!strcmp(name, "fail"))
		return -1;
	pthread_mutex_lock(&mu);
	int key = (int)++n_events;
	pthread_mutex_unlock(&mu);
	return key;
}

EXPORT const char *asprof_emit_jfr_event(int key, const uint8_t *data, size_t len)
{
	log_line("emit %d %zu", key, len);
	if (key <= 0 || key > (int)n_events)
		return "fake: unknown event key";
	return len > 2048 || (len && !data) ? "fake: event too long" : NULL;
}
#endif
