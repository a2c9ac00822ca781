/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jfr.c - the JFR encoder (src/encode/jfr.c), checked by the JDK's
 * own reader: a synthetic window with CPU, wall-clock and allocation
 * events is encoded, written to a file, and tests/tools/jfr_check.py runs
 * `jfr summary` and `jfr print --json` on it and compares every event -
 * type, exact timestamp, thread id and name, state, each frame's class
 * (module), method (demangled name), frame type and line, the wall
 * samples count, the allocation's size and address - with what we put in.
 * Long polls (emberprof.LongPoll) likewise. Also: the compressed-integer layout the JDK reads, and refusal of bad
 * input. Fails loudly when `jfr` is missing.
 */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "emberprof.h"
#include "encode/jfr.h"
#include "read/jfr_profile.h"
#include "util/hashmap.h"

#define T0 1764515000123456789LL /* window start, ns since the epoch */

static uint32_t add_fn(ember__profile *p, const char *name, const char *sys)
{
	ember__function f = {ember__profile_strdup(p, name), ember__profile_strdup(p, sys), "", 0};
	return ember__profile_add_function(p, &f);
}

static uint32_t add_map(ember__profile *p, const char *file, uint64_t start)
{
	ember__mapping m = {.start = start, .limit = start + 0x100000, .offset = 0x1000,
			    .file = ember__profile_strdup(p, file), .build_id = ""};
	return ember__profile_add_mapping(p, &m);
}

/* A location with `n` lines (innermost first); n == 0: unsymbolized. */
static uint32_t add_loc(ember__profile *p, uint32_t map, uint64_t addr, int n, const uint32_t *fns,
			const int64_t *lines)
{
	ember__location l = {.address = addr, .mapping = map, .nlines = (uint32_t)n};
	if (n) {
		l.lines = ember__arena_alloc(&p->arena, (size_t)n * sizeof(*l.lines));
		for (int i = 0; i < n; i++)
			l.lines[i] = (ember__line){fns[i], lines[i]};
	}
	return ember__profile_add_location(p, &l);
}

static void add_sample(ember__profile *p, const uint32_t *locs, uint32_t n)
{
	ember__sample s = {.nlocs = n};
	s.locs = ember__arena_alloc(&p->arena, n * sizeof(*s.locs));
	memcpy(s.locs, locs, n * sizeof(*locs));
	s.values[0] = 1;
	ember__profile_add_sample(p, &s);
}

typedef struct fixture {
	ember__profile *cpu, *wall, *mem;
} fixture;

static void make_profiles(fixture *f)
{
	ember__profile *p = f->cpu = ember__profile_new();
	uint32_t app = add_map(p, "/opt/app/bin/server", 0x400000);
	uint32_t lib = add_map(p, "/usr/lib/x86_64-linux-gnu/libwidget.so.3", 0x7f0000000000);
	uint32_t f_main = add_fn(p, "main", "main");
	uint32_t f_hot = add_fn(p, "hot_loop", "hot_loop");
	uint32_t f_inl = add_fn(p, "inlined_helper", "inlined_helper");
	uint32_t f_cpp = add_fn(p, "ns::Widget::run()", "_ZN2ns6Widget3runEv");
	int64_t l0[] = {0};
	uint32_t main_loc = add_loc(p, app, 0x401000, 1, &f_main, (int64_t[]){42});
	/* hot_loop with inlined_helper inlined into it: two frames, one location */
	uint32_t hot_loc = add_loc(p, app, 0x402000, 2, (uint32_t[]){f_inl, f_hot},
				   (int64_t[]){7, 19});
	uint32_t cpp_loc = add_loc(p, lib, 0x7f0000001234, 1, &f_cpp, l0);
	uint32_t raw_loc = add_loc(p, lib, 0x7f0000005678, 0, NULL, NULL);
	add_sample(p, (uint32_t[]){hot_loc, main_loc}, 2);
	add_sample(p, (uint32_t[]){raw_loc, cpp_loc, main_loc}, 3);

	p = f->wall = ember__profile_new();
	app = add_map(p, "/opt/app/bin/server", 0x400000);
	uint32_t libc = add_map(p, "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7e0000000000);
	f_main = add_fn(p, "main", "main");
	uint32_t f_sleep = add_fn(p, "clock_nanosleep", "clock_nanosleep");
	main_loc = add_loc(p, app, 0x401000, 1, &f_main, (int64_t[]){42});
	uint32_t sleep_loc = add_loc(p, libc, 0x7e0000000100, 1, &f_sleep, l0);
	add_sample(p, (uint32_t[]){sleep_loc, main_loc}, 2);

	p = f->mem = ember__profile_new();
	app = add_map(p, "/opt/app/bin/server", 0x400000);
	uint32_t f_alloc = add_fn(p, "make_buffer", "make_buffer");
	add_sample(p, (uint32_t[]){add_loc(p, app, 0x403000, 1, &f_alloc, (int64_t[]){5})}, 1);
}

static void free_profiles(fixture *f)
{
	ember__profile_free(f->cpu);
	ember__profile_free(f->wall);
	ember__profile_free(f->mem);
}

/* Runs the checker; 0 when the JDK's reader agrees with expect_json. */
static int jfr_check(const uint8_t *jfr, size_t len, const char *expect_json)
{
	char dir[] = "/tmp/test_jfr.XXXXXX";
	if (!mkdtemp(dir))
		return -1;
	char path[128], exp[128], cmd[512];
	snprintf(path, sizeof(path), "%s/w.jfr", dir);
	snprintf(exp, sizeof(exp), "%s/expect.json", dir);
	FILE *f = fopen(path, "wb");
	fwrite(jfr, 1, len, f);
	fclose(f);
	f = fopen(exp, "w");
	fputs(expect_json, f);
	fclose(f);
	const char *src = getenv("EMBER_TEST_SRCDIR");
	snprintf(cmd, sizeof(cmd), "python3 %s/tests/tools/jfr_check.py %s %s", src ? src : ".", path,
		 exp);
	int rc = system(cmd);
	unlink(path);
	unlink(exp);
	rmdir(dir);
	return rc;
}

/* Encodes the fixture's window: 3 CPU, 2 wall-clock (3 + 1 samples) and
 * 1 allocation (4096 bytes) events. */
static int encode_window(fixture *fx, uint8_t **out, size_t *len)
{
	/* Out of time order on purpose: the file is sorted. */
	ember__jfr_event ev[] = {
		{T0 + 3000, 20000000, 0, 1, 102, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
		{T0 + 1000, 10000000, 0, 0, 101, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
		{T0 + 2000, 10000000, 0, 0, 102, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
		{T0 + 4000, 149000000, 0, 0, 103, EMBER_JFR_WALL, EMBER_JFR_STATE_SLEEPING},
		{T0 + 5000, 40000000, 0, 0, 101, EMBER_JFR_WALL, EMBER_JFR_STATE_DEFAULT},
		{T0 + 9876543210LL, 4096, 0x7f1234567890, 0, 101, EMBER_JFR_MALLOC, 0},
	};
	ember__jfr_thread th[] = {{101, "worker-a"}, {102, "worker-b"}};
	ember__jfr_window w = {
		.start_ns = T0, .end_ns = T0 + 10000000000LL,
		.profiles = {fx->cpu, fx->wall, fx->mem},
		.events = ev, .nevents = 6, .threads = th, .nthreads = 2,
		.wall_interval_ns = 50000000, .max_depth = 3,
		.cpu_interval_ns = 10000000, .alloc_interval = 524288,
	};
	return ember__jfr_encode(&w, out, len);
}

static void test_window_read_by_jdk(void)
{
	fixture fx;
	make_profiles(&fx);
	uint8_t *out = NULL;
	size_t len = 0;
	CHECK_EQ_INT(encode_window(&fx, &out, &len), 0);
	CHECK(len > 68);
	CHECK(out && !memcmp(out, "FLR\0\0\2\0\0", 8));
	/* chunk size in the header is the file's size */
	uint64_t sz = 0;
	for (int i = 0; i < 8; i++)
		sz = sz << 8 | out[8 + i];
	CHECK_EQ_INT(sz, len);

	char expect[8192];
	snprintf(expect, sizeof(expect),
		 "{\"counts\": {\"jdk.ExecutionSample\": 3, \"profiler.WallClockSample\": 2,"
		 " \"profiler.Malloc\": 1},"
		 " \"frame_types\": [\"Native\", \"C++\"],"
		 " \"settings\": {\"interval\": \"10000000\", \"wall\": \"50000000\","
		 " \"nativemem\": \"524288\", \"event\": \"cpu\", \"enabled\": \"true\"},"
		 /* the one mapping a frame without a name lies in (for symbolize) */
		 " \"mappings\": [{\"module\": \"libwidget.so.3\","
		 " \"path\": \"/usr/lib/x86_64-linux-gnu/libwidget.so.3\", \"buildId\": \"\","
		 " \"start\": %lld, \"end\": %lld, \"offset\": 4096}],"
		 " \"events\": ["
		 "{\"type\": \"jdk.ExecutionSample\", \"time_ns\": %lld, \"tid\": 101,"
		 " \"thread\": \"worker-a\", \"state\": \"STATE_DEFAULT\", \"truncated\": false,"
		 " \"frames\": [[\"server\", \"inlined_helper\", \"Native\", 7],"
		 " [\"server\", \"hot_loop\", \"Native\", 19], [\"server\", \"main\", \"Native\", 42]]},"
		 "{\"type\": \"jdk.ExecutionSample\", \"time_ns\": %lld, \"tid\": 102,"
		 " \"thread\": \"worker-b\", \"state\": \"STATE_DEFAULT\"},"
		 "{\"type\": \"jdk.ExecutionSample\", \"time_ns\": %lld, \"tid\": 102, \"truncated\": true,"
		 " \"frames\": [[\"libwidget.so.3\", \"0x6678\", \"Native\", 0],"
		 " [\"libwidget.so.3\", \"ns::Widget::run()\", \"C++\", 0],"
		 " [\"server\", \"main\", \"Native\", 42]]},"
		 "{\"type\": \"profiler.WallClockSample\", \"time_ns\": %lld, \"tid\": 103,"
		 " \"thread\": \"[tid=103]\", \"state\": \"STATE_SLEEPING\", \"samples\": 3,"
		 " \"frames\": [[\"libc.so.6\", \"clock_nanosleep\", \"Native\", 0],"
		 " [\"server\", \"main\", \"Native\", 42]]},"
		 "{\"type\": \"profiler.WallClockSample\", \"time_ns\": %lld, \"tid\": 101,"
		 " \"state\": \"STATE_RUNNABLE\", \"samples\": 1},"
		 "{\"type\": \"profiler.Malloc\", \"time_ns\": %lld, \"tid\": 101, \"thread\": \"worker-a\","
		 " \"size\": 4096, \"address\": %lld,"
		 " \"frames\": [[\"server\", \"make_buffer\", \"Native\", 5]]}"
		 "]}",
		 (long long)0x7f0000000000, (long long)0x7f0000100000, T0 + 1000, T0 + 2000, T0 + 3000, T0 + 4000, T0 + 5000, T0 + 9876543210LL,
		 (long long)0x7f1234567890);
	CHECK_EQ_INT(jfr_check(out, len, expect), 0);

	/* The checker itself fails on a wrong expectation (a test that can fail). */
	CHECK(jfr_check(out, len, "{\"counts\": {\"jdk.ExecutionSample\": 4}}") != 0);
	free(out);
	free_profiles(&fx);
}

/* The function and module names of sample s's frames, leaf first,
 * as "module:function:line ..." */
static void frames_of(const ember__profile *p, const ember__sample *s, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = '\0';
	for (uint32_t i = 0; i < s->nlocs && n < cap; i++) {
		const ember__location *l = &p->locations[s->locs[i] - 1];
		const char *mod = l->mapping ? p->mappings[l->mapping - 1].file : "";
		n += (size_t)snprintf(buf + n, cap - n, "%s%s:%s:%lld", i ? " " : "", mod,
				      p->functions[l->lines[0].function - 1].name,
				      (long long)l->lines[0].line);
	}
}

/* Back from JFR to the profile model (what `emberprof top` reads). */
static void test_to_profile(void)
{
	fixture fx;
	make_profiles(&fx);
	uint8_t *out = NULL;
	size_t len = 0;
	CHECK_EQ_INT(encode_window(&fx, &out, &len), 0);
	CHECK(ember__jfr_magic(out, len));
	ember__profile *p = NULL;
	CHECK_EQ_INT(ember__jfr_to_profile(out, len, &p), 0);
	if (!p) {
		free(out);
		free_profiles(&fx);
		return;
	}
	/* Value types in order of appearance; the default is cpu. */
	CHECK_EQ_INT(p->nvalues, 3);
	CHECK(p->default_sample_type && !strcmp(p->default_sample_type, "cpu"));
	int64_t total[3] = {0, 0, 0};
	const char *names[3] = {"cpu", "wall", "alloc_space"};
	int idx[3] = {-1, -1, -1};
	for (uint32_t v = 0; v < p->nvalues; v++)
		for (int k = 0; k < 3; k++)
			if (!strcmp(p->sample_type[v].type, names[k]))
				idx[k] = (int)v;
	CHECK(idx[0] >= 0 && idx[1] >= 0 && idx[2] >= 0);
	CHECK(!strcmp(p->sample_type[idx[2]].unit, "bytes"));
	char fr[512], cpu_leafs[1024] = "";
	for (uint32_t i = 0; i < p->nsamples; i++) {
		for (int k = 0; k < 3; k++)
			if (idx[k] >= 0)
				total[k] += p->samples[i].values[idx[k]];
		frames_of(p, &p->samples[i], fr, sizeof(fr));
		if (idx[2] >= 0 && p->samples[i].values[idx[2]])
			CHECK(!strcmp(fr, "server:make_buffer:5"));
		if (idx[0] >= 0 && p->samples[i].values[idx[0]]) {
			strncat(cpu_leafs, fr, sizeof(cpu_leafs) - strlen(cpu_leafs) - 2);
			strcat(cpu_leafs, "|");
		}
	}
	CHECK_EQ_INT(total[0], 3);    /* three CPU events */
	CHECK_EQ_INT(total[1], 4);    /* wall: samples 3 + 1 */
	CHECK_EQ_INT(total[2], 4096); /* the allocation's size */
	/* Stacks leaf first, inlined frames as frames, module = mapping file,
	 * unsymbolized frames by address. */
	CHECK(strstr(cpu_leafs, "server:inlined_helper:7 server:hot_loop:19 server:main:42|"));
	CHECK(strstr(cpu_leafs,
		     "libwidget.so.3:0x6678:0 libwidget.so.3:ns::Widget::run():0 server:main:42|"));
	/* Interned: main in server is one function and one location. */
	int mains = 0;
	for (uint32_t i = 0; i < p->nfunctions; i++)
		mains += !strcmp(p->functions[i].name, "main");
	CHECK_EQ_INT(mains, 1);
	ember__profile_free(p);

	/* Bad input: never a crash, a format error naming the problem. */
	CHECK_EQ_INT(ember__jfr_to_profile((const uint8_t *)"PK\3\4", 4, &p), EMBER_ERR_FORMAT);
	CHECK(p == NULL && strstr(ember_last_error(), "not a JFR"));
	for (size_t cut = 4; cut < len; cut += len / 7 + 1)
		if (ember__jfr_to_profile(out, cut, &p) == 0)
			ember__profile_free(p); /* a prefix may still be a valid recording */
	free(out);
	free_profiles(&fx);

	/* A recording without samples of a known type. */
	ember__jfr_window w = {.start_ns = T0, .end_ns = T0 + 5};
	CHECK_EQ_INT(ember__jfr_encode(&w, &out, &len), 0);
	CHECK_EQ_INT(ember__jfr_to_profile(out, len, &p), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "jdk.ExecutionSample"));
	free(out);
}

static void test_empty_window(void)
{
	/* The final window of an idle program: no events at all. */
	ember__jfr_window w = {.start_ns = T0, .end_ns = T0 + 5};
	uint8_t *out = NULL;
	size_t len = 0;
	CHECK_EQ_INT(ember__jfr_encode(&w, &out, &len), 0);
	CHECK_EQ_INT(jfr_check(out, len, "{\"counts\": {}}"), 0);
	free(out);
}

static void test_bad_input(void)
{
	fixture fx;
	make_profiles(&fx);
	uint8_t *out = NULL;
	size_t len = 0;
	ember__jfr_event ev = {T0, 1, 0, 0, 5, EMBER_JFR_WALL, 0};
	ember__jfr_window w = {.start_ns = T0, .end_ns = T0 + 1, .events = &ev, .nevents = 1,
			       .profiles = {fx.cpu}};
	CHECK_EQ_INT(ember__jfr_encode(&w, &out, &len), EMBER_ERR_INVALID); /* no wall profile */
	CHECK(strstr(ember_last_error(), "without a profile"));
	ev.kind = EMBER_JFR_CPU;
	ev.sample = 2;
	CHECK_EQ_INT(ember__jfr_encode(&w, &out, &len), EMBER_ERR_INVALID); /* sample 2 of 2 */
	ev.sample = 1;
	ev.tid = 0;
	CHECK_EQ_INT(ember__jfr_encode(&w, &out, &len), EMBER_ERR_INVALID);
	CHECK(out == NULL);
	free_profiles(&fx);
}

/* Compressed integers as the JDK reads them: 7 bits a byte, the ninth byte 8. */
static void test_varint_layout(void)
{
	fixture fx;
	make_profiles(&fx);
	/* A time before the window start gives negative ticks: nine bytes. */
	ember__jfr_event ev = {T0 - 1, 1, 0, 0, 300, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE};
	ember__jfr_window w = {.start_ns = T0, .end_ns = T0 + 1, .events = &ev, .nevents = 1,
			       .profiles = {fx.cpu}};
	uint8_t *out = NULL;
	size_t len = 0;
	CHECK_EQ_INT(ember__jfr_encode(&w, &out, &len), 0);
	/* find the event: type 101 (0x65) after a one-byte size, then ticks */
	const uint8_t want[] = {0x65, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				0xac, 0x02 /* tid 300 */};
	int found = 0;
	for (size_t i = 1; i + sizeof(want) <= len; i++)
		if (out[i - 1] == 15 && !memcmp(out + i, want, sizeof(want)))
			found = 1;
	CHECK(found);
	char expect[256];
	snprintf(expect, sizeof(expect), "{\"events\": [{\"time_ns\": %lld, \"tid\": 300}]}", T0 - 1);
	CHECK_EQ_INT(jfr_check(out, len, expect), 0);
	free(out);
	free_profiles(&fx);
}

/* Long polls (emberprof.LongPoll) among the samples, as the JDK reads them:
 * start (one before the window: negative ticks), duration, thread, id. */
static void test_long_polls(void)
{
	fixture fx;
	make_profiles(&fx);
	ember__jfr_event ev[] = {
		{T0 + 2000000, 10000000, 0, 0, 101, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
		{T0 + 90000000, 10000000, 0, 1, 101, EMBER_JFR_CPU, EMBER_JFR_STATE_RUNNABLE},
	};
	ember__jfr_poll polls[] = {
		{T0 + 80000000, 150250000, 7, 101, 0},
		{T0 - 5000000, 12345678, 3, 102, 1},
	};
	ember__jfr_thread th[] = {{101, "loop"}};
	ember__jfr_window w = {
		.start_ns = T0, .end_ns = T0 + 1000000000,
		.profiles = {fx.cpu}, .events = ev, .nevents = 2, .threads = th, .nthreads = 1,
		.polls = polls, .npolls = 2,
	};
	uint8_t *out = NULL;
	size_t len = 0;
	CHECK_EQ_INT(ember__jfr_encode(&w, &out, &len), 0);
	char expect[2048];
	snprintf(expect, sizeof(expect),
		 "{\"counts\": {\"jdk.ExecutionSample\": 2, \"emberprof.LongPoll\": 2},"
		 " \"events\": ["
		 "{\"type\": \"jdk.ExecutionSample\", \"time_ns\": %lld, \"tid\": 101},"
		 "{\"type\": \"emberprof.LongPoll\", \"time_ns\": %lld, \"tid\": 102,"
		 " \"thread\": \"[tid=102]\", \"duration_ns\": 12345678, \"pollId\": 3,"
		 " \"open\": true},"
		 "{\"type\": \"jdk.ExecutionSample\", \"time_ns\": %lld, \"tid\": 101},"
		 "{\"type\": \"emberprof.LongPoll\", \"time_ns\": %lld, \"tid\": 101,"
		 " \"thread\": \"loop\", \"duration_ns\": 150250000, \"pollId\": 7,"
		 " \"open\": false}"
		 "]}",
		 T0 + 2000000, T0 - 5000000, T0 + 90000000, T0 + 80000000);
	CHECK_EQ_INT(jfr_check(out, len, expect), 0);
	/* a wrong duration is caught (the JDK prints them in end-time order) */
	CHECK(jfr_check(out, len, "{\"events\": [{}, {\"duration_ns\": 12345679}, {}, {}]}") != 0);
	free(out);

	polls[1].tid = 0;
	CHECK_EQ_INT(ember__jfr_encode(&w, &out, &len), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "poll 1"));
	polls[1].tid = 102;
	polls[1].duration_ns = -1;
	CHECK_EQ_INT(ember__jfr_encode(&w, &out, &len), EMBER_ERR_INVALID);
	CHECK(out == NULL);
	free_profiles(&fx);
}

/* The wall total (WallClockSample.samples summed) of a recording. */
static int64_t wall_total(const uint8_t *jfr, size_t len)
{
	ember__profile *p = NULL;
	if (ember__jfr_to_profile(jfr, len, &p) != 0 || !p)
		return -1;
	int64_t total = 0;
	for (uint32_t v = 0; v < p->nvalues; v++)
		if (!strcmp(p->sample_type[v].type, "wall"))
			for (uint32_t i = 0; i < p->nsamples; i++)
				total += p->samples[i].values[v];
	ember__profile_free(p);
	return total;
}

/* WallClockSample.samples carry the rest of each event's weight to the
 * thread's next event, across windows with a caller's map: four 30 ms
 * events at 50 ms intervals count 2 in all (120 ms: 2.4 intervals, where
 * rounding each up to one counted 4), and the next window's 30 ms event,
 * with the 20 ms left over, counts 1. */
static void test_wall_carry(void)
{
	fixture fx;
	make_profiles(&fx);
	ember__jfr_event ev[4];
	for (int i = 0; i < 4; i++)
		ev[i] = (ember__jfr_event){T0 + 1000 * (i + 1), 30000000, 0, 0, 7, EMBER_JFR_WALL,
					   EMBER_JFR_STATE_SLEEPING};
	ember__u64map carry;
	memset(&carry, 0, sizeof(carry));
	ember__jfr_window w = {
		.start_ns = T0, .end_ns = T0 + 1000000000,
		.profiles = {fx.cpu, fx.wall, fx.mem},
		.events = ev, .nevents = 4, .wall_interval_ns = 50000000, .wall_carry = &carry,
	};
	uint8_t *out = NULL;
	size_t len = 0;
	CHECK_EQ_INT(ember__jfr_encode(&w, &out, &len), 0);
	CHECK_EQ_INT(wall_total(out, len), 2);
	free(out);
	w.start_ns = T0 + 1000000000;
	w.end_ns = T0 + 2000000000;
	w.nevents = 1;
	ev[0].time_ns = w.start_ns + 1000;
	CHECK_EQ_INT(ember__jfr_encode(&w, &out, &len), 0);
	CHECK_EQ_INT(wall_total(out, len), 1); /* 20 ms carried + 30 ms */
	free(out);
	ember__u64map_free(&carry);
	free_profiles(&fx);
}

int main(void)
{
	RUN(test_window_read_by_jdk);
	RUN(test_to_profile);
	RUN(test_empty_window);
	RUN(test_bad_input);
	RUN(test_varint_layout);
	RUN(test_long_polls);
	RUN(test_wall_carry);
	return CHECK_DONE();
}
