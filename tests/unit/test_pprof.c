/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pprof.c - the pprof encoder and reader.
 *
 * A hand-built profile (two mappings, functions including an inlined one,
 * an address-only location, string and numeric labels) is encoded, then
 *   (a) decoded by our reader and compared field by field;
 *   (b) handed to `go tool pprof -raw`, whose output must show our
 *       samples, names, build id and labels, and re-encoded with
 *       `go tool pprof -proto` (Go's encoder: other ids, order, packing),
 *       which our reader must read back with the same totals.
 * Go is required: without it the test fails, saying golang-go is needed.
 * Hand-written protobuf then checks sparse/unordered ids, unpacked
 * repeated fields, and that bad references and malformed input are
 * rejected with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "emberprof.h"
#include "encode/pprof.h"
#include "read/pprof_read.h"
#include "encode/protobuf.h"

static char tmpdir[256];

/* ---- the reference profile ---- */

static const char *S(ember__profile *p, const char *s)
{
	return ember__profile_strdup(p, s);
}

static uint32_t add_loc(ember__profile *p, uint64_t addr, uint32_t mapping, uint32_t nlines,
			const uint32_t *fns, const int64_t *lines)
{
	ember__location l = {addr, mapping, nlines, NULL};
	if (nlines) {
		l.lines = ember__arena_alloc(&p->arena, nlines * sizeof(*l.lines));
		for (uint32_t i = 0; i < nlines; i++)
			l.lines[i] = (ember__line){fns[i], lines[i]};
	}
	return ember__profile_add_location(p, &l);
}

static void add_sample(ember__profile *p, const uint32_t *locs, uint32_t n, int64_t v0, int64_t v1,
		       uint32_t nlabels, const ember__label *labels)
{
	ember__sample s;
	memset(&s, 0, sizeof(s));
	s.locs = ember__arena_alloc(&p->arena, n * sizeof(*s.locs));
	memcpy(s.locs, locs, n * sizeof(*s.locs));
	s.nlocs = n;
	s.values[0] = v0;
	s.values[1] = v1;
	if (nlabels) {
		s.labels = ember__arena_alloc(&p->arena, nlabels * sizeof(*labels));
		memcpy(s.labels, labels, nlabels * sizeof(*labels));
		s.nlabels = nlabels;
	}
	ember__profile_add_sample(p, &s);
}

enum { F_MAIN = 1, F_COMPUTE, F_HELPER, F_MEMCPY };

static ember__profile *build_profile(void)
{
	ember__profile *p = ember__profile_new();
	p->nvalues = 2;
	p->sample_type[0] = (ember__value_type){S(p, "samples"), S(p, "count")};
	p->sample_type[1] = (ember__value_type){S(p, "cpu"), S(p, "nanoseconds")};
	p->period_type = (ember__value_type){S(p, "cpu"), S(p, "nanoseconds")};
	p->period = 10000000;
	p->time_nanos = 1700000000123456789LL;
	p->duration_nanos = 10000000000LL;
	p->default_sample_type = S(p, "cpu");
	p->comment = S(p, "emberprof test\nsecond line");

	ember__mapping m1 = {0x400000, 0x500000, 0, S(p, "/usr/bin/emberdemo"),
			     S(p, "0123456789abcdef0123456789abcdef01234567"), 1, 1, 1};
	ember__mapping m2 = {0x7f0000000000, 0x7f0000200000, 0x28000,
			     S(p, "/lib/x86_64-linux-gnu/libc.so.6"), S(p, "feedfacecafe"), 1, 0, 0};
	ember__profile_add_mapping(p, &m1);
	ember__profile_add_mapping(p, &m2);

	ember__function f[] = {
		{S(p, "main"), S(p, "main"), S(p, "demo/main.c"), 10},
		{S(p, "compute(int)"), S(p, "_Z7computei"), S(p, "demo/compute.c"), 40},
		{S(p, "helper_inlined"), S(p, "helper_inlined"), S(p, "demo/compute.c"), 5},
		{S(p, "memcpy"), S(p, "__memcpy_avx_unaligned"), S(p, ""), 0},
	};
	for (int i = 0; i < 4; i++)
		ember__profile_add_function(p, &f[i]);

	/* L1: helper_inlined inlined into compute. */
	uint32_t l1 = add_loc(p, 0x401234, 1, 2, (uint32_t[]){F_HELPER, F_COMPUTE},
			      (int64_t[]){7, 44});
	uint32_t l2 = add_loc(p, 0x400800, 1, 1, (uint32_t[]){F_MAIN}, (int64_t[]){12});
	uint32_t l3 = add_loc(p, 0x7f0000001000, 2, 1, (uint32_t[]){F_MEMCPY}, (int64_t[]){0});
	uint32_t l4 = add_loc(p, 0xdeadbeef, 0, 0, NULL, NULL); /* unknown code */

	ember__label lab1[] = {
		{S(p, "thread_name"), S(p, "worker-1"), 0, NULL},
		{S(p, "thread_id"), NULL, 4242, NULL},
		{S(p, "alloc"), NULL, 512, S(p, "bytes")},
	};
	ember__label lab2[] = {{S(p, "thread_name"), S(p, "main"), 0, NULL}};
	add_sample(p, (uint32_t[]){l1, l2}, 2, 7, 70000000, 3, lab1);
	add_sample(p, (uint32_t[]){l3, l1, l2}, 3, 3, 30000000, 1, lab2);
	add_sample(p, (uint32_t[]){l4, l2}, 2, 2, 20000000, 0, NULL);
	return p;
}

/* ---- comparison ---- */

/* Optional strings: both NULL, or equal. */
#define CHECK_EQ_OPT(a, b)                                                      \
	do {                                                                    \
		if ((a) || (b))                                                 \
			CHECK_EQ_STR(a, b);                                     \
	} while (0)

/* Value type strings: the encoder writes NULL as "", so they compare so. */
#define CHECK_EQ_VT(a, b) CHECK_EQ_STR((a) ? (a) : "", (b) ? (b) : "")

static void compare_profiles(const ember__profile *a, const ember__profile *b)
{
	CHECK_EQ_INT(b->nvalues, a->nvalues);
	for (uint32_t i = 0; i < a->nvalues && i < b->nvalues; i++) {
		CHECK_EQ_VT(b->sample_type[i].type, a->sample_type[i].type);
		CHECK_EQ_VT(b->sample_type[i].unit, a->sample_type[i].unit);
	}
	CHECK_EQ_VT(b->period_type.type, a->period_type.type);
	CHECK_EQ_VT(b->period_type.unit, a->period_type.unit);
	CHECK_EQ_INT(b->period, a->period);
	CHECK_EQ_INT(b->time_nanos, a->time_nanos);
	CHECK_EQ_INT(b->duration_nanos, a->duration_nanos);
	CHECK_EQ_OPT(b->default_sample_type, a->default_sample_type);
	CHECK_EQ_OPT(b->comment, a->comment);

	CHECK_EQ_INT(b->nmappings, a->nmappings);
	for (uint32_t i = 0; i < a->nmappings && i < b->nmappings; i++) {
		const ember__mapping *x = &a->mappings[i], *y = &b->mappings[i];
		CHECK(x->start == y->start && x->limit == y->limit && x->offset == y->offset);
		CHECK_EQ_STR(y->file, x->file);
		CHECK_EQ_STR(y->build_id, x->build_id);
		CHECK_EQ_INT(y->has_functions, x->has_functions);
		CHECK_EQ_INT(y->has_filenames, x->has_filenames);
		CHECK_EQ_INT(y->has_line_numbers, x->has_line_numbers);
	}
	CHECK_EQ_INT(b->nfunctions, a->nfunctions);
	for (uint32_t i = 0; i < a->nfunctions && i < b->nfunctions; i++) {
		const ember__function *x = &a->functions[i], *y = &b->functions[i];
		CHECK_EQ_STR(y->name, x->name);
		CHECK_EQ_STR(y->system_name, x->system_name);
		CHECK_EQ_STR(y->filename, x->filename);
		CHECK_EQ_INT(y->start_line, x->start_line);
	}
	CHECK_EQ_INT(b->nlocations, a->nlocations);
	for (uint32_t i = 0; i < a->nlocations && i < b->nlocations; i++) {
		const ember__location *x = &a->locations[i], *y = &b->locations[i];
		CHECK(x->address == y->address);
		CHECK_EQ_INT(y->mapping, x->mapping);
		CHECK_EQ_INT(y->nlines, x->nlines);
		for (uint32_t k = 0; k < x->nlines && k < y->nlines; k++) {
			CHECK_EQ_INT(y->lines[k].function, x->lines[k].function);
			CHECK_EQ_INT(y->lines[k].line, x->lines[k].line);
		}
	}
	CHECK_EQ_INT(b->nsamples, a->nsamples);
	for (uint32_t i = 0; i < a->nsamples && i < b->nsamples; i++) {
		const ember__sample *x = &a->samples[i], *y = &b->samples[i];
		CHECK_EQ_INT(y->nlocs, x->nlocs);
		for (uint32_t k = 0; k < x->nlocs && k < y->nlocs; k++)
			CHECK_EQ_INT(y->locs[k], x->locs[k]);
		for (uint32_t k = 0; k < a->nvalues; k++)
			CHECK_EQ_INT(y->values[k], x->values[k]);
		CHECK_EQ_INT(y->nlabels, x->nlabels);
		for (uint32_t k = 0; k < x->nlabels && k < y->nlabels; k++) {
			const ember__label *lx = &x->labels[k], *ly = &y->labels[k];
			CHECK_EQ_STR(ly->key, lx->key);
			CHECK((lx->str == NULL) == (ly->str == NULL));
			if (lx->str && ly->str)
				CHECK_EQ_STR(ly->str, lx->str);
			CHECK_EQ_INT(ly->num, lx->num);
			CHECK((lx->num_unit == NULL) == (ly->num_unit == NULL));
			if (lx->num_unit && ly->num_unit)
				CHECK_EQ_STR(ly->num_unit, lx->num_unit);
		}
	}
}

/* Counts occurrences of `needle` in the raw bytes. */
static int count_bytes(const uint8_t *hay, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	int c = 0;
	for (size_t i = 0; i + k <= n; i++)
		if (memcmp(hay + i, needle, k) == 0)
			c++;
	return c;
}

static void test_roundtrip(void)
{
	ember__profile *p = build_profile();
	uint8_t *gz = NULL, *raw = NULL;
	size_t gz_len = 0, raw_len = 0;
	CHECK_EQ_INT(ember__pprof_encode(p, &gz, &gz_len), 0);
	CHECK_EQ_INT(ember__pprof_encode_raw(p, &raw, &raw_len), 0);
	CHECK(gz_len > 18 && gz[0] == 0x1f && gz[1] == 0x8b);
	CHECK(raw_len > 0 && raw[0] != 0x1f);
	/* Interned: each string appears once in the raw encoding. */
	CHECK_EQ_INT(count_bytes(raw, raw_len, "demo/compute.c"), 1);
	CHECK_EQ_INT(count_bytes(raw, raw_len, "thread_name"), 1);
	CHECK_EQ_INT(count_bytes(raw, raw_len, "nanoseconds"), 1);

	ember__profile *q = NULL;
	CHECK_EQ_INT(ember__pprof_read(gz, gz_len, &q), 0);
	if (q)
		compare_profiles(p, q);
	ember__profile_free(q);
	q = NULL;
	CHECK_EQ_INT(ember__pprof_read(raw, raw_len, &q), 0);
	if (q)
		compare_profiles(p, q);

	/* Re-encoding what we read gives the same bytes. */
	uint8_t *raw2 = NULL;
	size_t raw2_len = 0;
	if (q) {
		CHECK_EQ_INT(ember__pprof_encode_raw(q, &raw2, &raw2_len), 0);
		CHECK(raw2_len == raw_len && memcmp(raw, raw2, raw_len) == 0);
	}
	free(raw2);
	ember__profile_free(q);
	free(gz);
	free(raw);
	ember__profile_free(p);
}

/* ---- go tool pprof ---- */

static int have_go(void)
{
	return system("go version >/dev/null 2>&1") == 0;
}

/* Runs `cmd` through popen, capturing stdout (stderr is left alone).
 * Returns the malloc'd output and the exit status in *status. */
static char *run_capture(const char *cmd, int *status)
{
	FILE *fp = popen(cmd, "r");
	if (!fp) {
		*status = -1;
		return NULL;
	}
	size_t cap = 4096, len = 0;
	char *out = malloc(cap);
	size_t n;
	while ((n = fread(out + len, 1, cap - len - 1, fp)) > 0) {
		len += n;
		if (cap - len < 2) {
			cap *= 2;
			out = realloc(out, cap);
		}
	}
	out[len] = '\0';
	int st = pclose(fp);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

static int write_file(const char *path, const uint8_t *data, size_t len)
{
	FILE *fp = fopen(path, "wb");
	if (!fp)
		return -1;
	size_t n = fwrite(data, 1, len, fp);
	return fclose(fp) == 0 && n == len ? 0 : -1;
}

static int64_t sum_values(const ember__profile *p, uint32_t vi)
{
	int64_t s = 0;
	for (uint32_t i = 0; i < p->nsamples; i++)
		s += p->samples[i].values[vi];
	return s;
}

static const ember__function *find_function(const ember__profile *p, const char *name)
{
	for (uint32_t i = 0; i < p->nfunctions; i++)
		if (strcmp(p->functions[i].name, name) == 0)
			return &p->functions[i];
	return NULL;
}

static void test_go_tool_pprof(void)
{
	if (!have_go()) {
		fprintf(stderr, "test_pprof: `go` is not on PATH; install golang-go "
				"(go tool pprof is needed to validate the encoder)\n");
		CHECK(!"golang-go is needed");
		return;
	}
	ember__profile *p = build_profile();
	uint8_t *gz = NULL;
	size_t gz_len = 0;
	CHECK_EQ_INT(ember__pprof_encode(p, &gz, &gz_len), 0);
	char path[512], repath[512], cmd[2048];
	snprintf(path, sizeof(path), "%s/ours.pb.gz", tmpdir);
	snprintf(repath, sizeof(repath), "%s/re.pb.gz", tmpdir);
	CHECK_EQ_INT(write_file(path, gz, gz_len), 0);
	free(gz);

	int status;
	snprintf(cmd, sizeof(cmd), "go tool pprof -raw -symbolize=none '%s'", path);
	char *out = run_capture(cmd, &status);
	CHECK_EQ_INT(status, 0);
	CHECK(out != NULL);
	if (out) {
		/* Header and sample types. */
		CHECK(strstr(out, "PeriodType: cpu nanoseconds") != NULL);
		CHECK(strstr(out, "Period: 10000000") != NULL);
		CHECK(strstr(out, "samples/count cpu/nanoseconds") != NULL);
		/* Each sample's values as pprof prints them. */
		CHECK(strstr(out, "7   70000000:") != NULL);
		CHECK(strstr(out, "3   30000000:") != NULL);
		CHECK(strstr(out, "2   20000000:") != NULL);
		/* Names, the inlined frame, the mapping's build id, labels. */
		CHECK(strstr(out, "compute(int)") != NULL);
		CHECK(strstr(out, "helper_inlined") != NULL);
		CHECK(strstr(out, "memcpy") != NULL);
		CHECK(strstr(out, "/usr/bin/emberdemo 0123456789abcdef0123456789abcdef01234567") != NULL);
		CHECK(strstr(out, "libc.so.6 feedfacecafe [FN]\n") != NULL);
		/* Mapping 1 has an inlined location, so [IN]. */
		CHECK(strstr(out, "01234567 [FN][FL][LN][IN]\n") != NULL);
		CHECK(strstr(out, "thread_name:[worker-1]") != NULL);
		CHECK(strstr(out, "thread_name:[main]") != NULL);
		CHECK(strstr(out, "thread_id:[4242]") != NULL);
		CHECK(strstr(out, "alloc:[512bytes]") != NULL || strstr(out, "alloc:[512 bytes]") != NULL ||
		      strstr(out, "alloc:[512B]") != NULL);
		if (check_current_failed)
			fprintf(stderr, "---- go tool pprof -raw output ----\n%s----\n", out);
	}
	free(out);

	/* Go's encoder re-encodes it: other ids, order and packing. */
	snprintf(cmd, sizeof(cmd), "go tool pprof -proto -symbolize=none '%s' > '%s'", path, repath);
	char *junk = run_capture(cmd, &status);
	free(junk);
	CHECK_EQ_INT(status, 0);
	ember__profile *q = NULL;
	int err = ember__pprof_read_file(repath, &q);
	if (err)
		fprintf(stderr, "reading Go's re-encoding: %s\n", ember_last_error());
	CHECK_EQ_INT(err, 0);
	if (q) {
		CHECK_EQ_INT(q->nvalues, 2);
		CHECK_EQ_STR(q->sample_type[1].unit, "nanoseconds");
		CHECK_EQ_INT(sum_values(q, 0), sum_values(p, 0));
		CHECK_EQ_INT(sum_values(q, 1), sum_values(p, 1));
		CHECK_EQ_INT(q->nsamples, p->nsamples);
		CHECK_EQ_INT(q->nmappings, 2);
		int found_build_id = 0;
		for (uint32_t i = 0; i < q->nmappings; i++)
			found_build_id += strcmp(q->mappings[i].build_id,
						 "0123456789abcdef0123456789abcdef01234567") == 0;
		CHECK_EQ_INT(found_build_id, 1);
		const ember__function *f = find_function(q, "compute(int)");
		CHECK(f != NULL);
		if (f)
			CHECK_EQ_STR(f->system_name, "_Z7computei");
		/* The inlined location keeps its two lines, innermost first. */
		int inl = 0;
		for (uint32_t i = 0; i < q->nlocations; i++) {
			const ember__location *l = &q->locations[i];
			if (l->nlines == 2) {
				inl++;
				CHECK_EQ_STR(q->functions[l->lines[0].function - 1].name, "helper_inlined");
				CHECK_EQ_STR(q->functions[l->lines[1].function - 1].name, "compute(int)");
			}
		}
		CHECK_EQ_INT(inl, 1);
		/* Labels survive. */
		int labels = 0;
		for (uint32_t i = 0; i < q->nsamples; i++)
			for (uint32_t k = 0; k < q->samples[i].nlabels; k++) {
				const ember__label *l = &q->samples[i].labels[k];
				if (strcmp(l->key, "thread_id") == 0) {
					CHECK(l->str == NULL);
					CHECK_EQ_INT(l->num, 4242);
					labels++;
				}
				if (strcmp(l->key, "thread_name") == 0 && l->str &&
				    strcmp(l->str, "worker-1") == 0)
					labels++;
			}
		CHECK_EQ_INT(labels, 2);
	}
	ember__profile_free(q);
	ember__profile_free(p);
	unlink(path);
	unlink(repath);
}

/* Profiles written by Go's own runtime/pprof: a heap profile (four
 * values, Go's field order and ids) and a CPU profile. */
static const char go_program[] =
	"package main\n"
	"import (\n\t\"os\"\n\t\"runtime\"\n\t\"runtime/pprof\"\n)\n"
	"var sink [][]byte\n"
	"func main() {\n"
	"\truntime.MemProfileRate = 1\n"
	"\tfor i := 0; i < 100; i++ {\n\t\tsink = append(sink, make([]byte, 4096))\n\t}\n"
	"\truntime.GC()\n"
	"\th, _ := os.Create(os.Args[1])\n"
	"\tpprof.Lookup(\"heap\").WriteTo(h, 0)\n"
	"\th.Close()\n"
	"\tc, _ := os.Create(os.Args[2])\n"
	"\tpprof.StartCPUProfile(c)\n"
	"\tx := 0\n"
	"\tfor i := 0; i < 50000000; i++ {\n\t\tx += i * i\n\t}\n"
	"\tpprof.StopCPUProfile()\n"
	"\tc.Close()\n"
	"\tif x == 1 {\n\t\tprintln(x)\n\t}\n"
	"}\n";

static void test_go_runtime_profiles(void)
{
	if (!have_go()) {
		fprintf(stderr, "test_pprof: `go` is not on PATH; install golang-go\n");
		CHECK(!"golang-go is needed");
		return;
	}
	char src[512], heap[512], cpu[512], re[512], cmd[4096];
	snprintf(src, sizeof(src), "%s/gen.go", tmpdir);
	snprintf(heap, sizeof(heap), "%s/heap.pb.gz", tmpdir);
	snprintf(cpu, sizeof(cpu), "%s/cpu.pb.gz", tmpdir);
	snprintf(re, sizeof(re), "%s/heap.re.pb.gz", tmpdir);
	CHECK_EQ_INT(write_file(src, (const uint8_t *)go_program, strlen(go_program)), 0);
	int status;
	snprintf(cmd, sizeof(cmd), "cd '%s' && go run gen.go '%s' '%s' 1>&2", tmpdir, heap, cpu);
	free(run_capture(cmd, &status));
	CHECK_EQ_INT(status, 0);
	if (status)
		return;

	ember__profile *h = NULL, *c = NULL, *r = NULL;
	int err = ember__pprof_read_file(heap, &h);
	if (err)
		fprintf(stderr, "Go heap profile: %s\n", ember_last_error());
	CHECK_EQ_INT(err, 0);
	if (h) {
		CHECK_EQ_INT(h->nvalues, 4);
		CHECK_EQ_STR(h->sample_type[0].type, "alloc_objects");
		CHECK_EQ_STR(h->sample_type[3].unit, "bytes");
		CHECK(find_function(h, "main.main") != NULL);
		CHECK(h->nmappings >= 1);
		/* main.main allocated at least 100 x 4 KiB, at rate 1 exactly. */
		int64_t main_bytes = 0;
		for (uint32_t i = 0; i < h->nsamples; i++) {
			const ember__location *l = &h->locations[h->samples[i].locs[0] - 1];
			if (l->nlines &&
			    strcmp(h->functions[l->lines[l->nlines - 1].function - 1].name,
				   "main.main") == 0)
				main_bytes += h->samples[i].values[1];
		}
		CHECK(main_bytes >= 100 * 4096);
	}
	/* Go's reader re-encoding Go's writer: same totals through ours. */
	snprintf(cmd, sizeof(cmd), "go tool pprof -proto '%s' > '%s'", heap, re);
	free(run_capture(cmd, &status));
	CHECK_EQ_INT(status, 0);
	CHECK_EQ_INT(ember__pprof_read_file(re, &r), 0);
	if (h && r)
		for (uint32_t v = 0; v < 4; v++)
			CHECK_EQ_INT(sum_values(r, v), sum_values(h, v));
	err = ember__pprof_read_file(cpu, &c);
	if (err)
		fprintf(stderr, "Go CPU profile: %s\n", ember_last_error());
	CHECK_EQ_INT(err, 0);
	if (c) {
		CHECK_EQ_INT(c->nvalues, 2);
		CHECK_EQ_STR(c->sample_type[1].type, "cpu");
		CHECK_EQ_STR(c->sample_type[1].unit, "nanoseconds");
		CHECK_EQ_STR(c->period_type.unit, "nanoseconds");
		CHECK(c->period > 0);
	}
	ember__profile_free(h);
	ember__profile_free(c);
	ember__profile_free(r);
}

/* ---- hand-written protobuf ---- */

/* Writes a string table: "" followed by the given strings. */
static void put_strings(ember__pbuf *b, const char *const *s, int n)
{
	ember__pb_bytes(b, 6, "", 0);
	for (int i = 0; i < n; i++)
		ember__pb_bytes(b, 6, s[i], strlen(s[i]));
}

/* A profile written the way other encoders may: strings first, ids
 * sparse and out of order, repeated fields unpacked, unknown fields. */
static void test_sparse_ids_unpacked(void)
{
	static const char *const strs[] = {"cpu", "nanoseconds", "f_a", "f_b", "/bin/x", "k", "v"};
	enum { CPU = 1, NS, FA, FB, BIN, K, V };
	ember__pbuf b = EMBER_PBUF_INIT;
	put_strings(&b, strs, 7);
	ember__pb_uint64(&b, 99, 5); /* unknown varint field */
	ember__pb_bytes(&b, 98, "zz", 2); /* unknown bytes field */
	size_t m = ember__pb_begin(&b, 1);
	ember__pb_uint64(&b, 1, CPU);
	ember__pb_uint64(&b, 2, NS);
	ember__pb_end(&b, m);
	/* Sample before the locations it uses; unpacked ids and value. */
	m = ember__pb_begin(&b, 2);
	ember__pb_uint64(&b, 1, 900);
	ember__pb_uint64(&b, 1, 30);
	ember__pb_uint64(&b, 2, 5);
	size_t lm = ember__pb_begin(&b, 3);
	ember__pb_uint64(&b, 1, K);
	ember__pb_uint64(&b, 2, V);
	ember__pb_end(&b, lm);
	ember__pb_end(&b, m);
	/* Location 30 then 900; functions 77 and 3. */
	m = ember__pb_begin(&b, 4);
	ember__pb_uint64(&b, 1, 30);
	ember__pb_uint64(&b, 2, 555);
	ember__pb_uint64(&b, 3, 0x1000);
	lm = ember__pb_begin(&b, 4);
	ember__pb_uint64(&b, 1, 77);
	ember__pb_uint64(&b, 2, 9);
	ember__pb_uint64(&b, 3, 4); /* column: dropped */
	ember__pb_end(&b, lm);
	ember__pb_uint64(&b, 5, 1); /* is_folded */
	ember__pb_end(&b, m);
	m = ember__pb_begin(&b, 4);
	ember__pb_uint64(&b, 1, 900);
	lm = ember__pb_begin(&b, 4);
	ember__pb_uint64(&b, 1, 3);
	ember__pb_end(&b, lm);
	ember__pb_end(&b, m);
	m = ember__pb_begin(&b, 5);
	ember__pb_uint64(&b, 1, 77);
	ember__pb_uint64(&b, 2, FA);
	ember__pb_end(&b, m);
	m = ember__pb_begin(&b, 5);
	ember__pb_uint64(&b, 1, 3);
	ember__pb_uint64(&b, 2, FB);
	ember__pb_end(&b, m);
	m = ember__pb_begin(&b, 3);
	ember__pb_uint64(&b, 1, 555);
	ember__pb_uint64(&b, 5, BIN);
	ember__pb_uint64(&b, 10, 1);
	ember__pb_end(&b, m);
	ember__pb_uint64(&b, 13, CPU); /* two comments, unpacked */
	ember__pb_uint64(&b, 13, FA);
	CHECK(!ember__pb_failed(&b));

	ember__profile *p = NULL;
	int err = ember__pprof_read(b.data, b.len, &p);
	if (err)
		fprintf(stderr, "%s\n", ember_last_error());
	CHECK_EQ_INT(err, 0);
	if (p) {
		CHECK_EQ_INT(p->nvalues, 1);
		CHECK_EQ_INT(p->nsamples, 1);
		CHECK_EQ_INT(p->nlocations, 2);
		CHECK_EQ_INT(p->nfunctions, 2);
		CHECK_EQ_INT(p->nmappings, 1);
		CHECK_EQ_STR(p->comment, "cpu\nf_a");
		CHECK(p->default_sample_type == NULL);
		const ember__sample *s = &p->samples[0];
		CHECK_EQ_INT(s->nlocs, 2);
		CHECK_EQ_INT(s->values[0], 5);
		/* id 900 is the second location, id 30 the first. */
		CHECK_EQ_INT(s->locs[0], 2);
		CHECK_EQ_INT(s->locs[1], 1);
		CHECK_EQ_INT(p->locations[0].mapping, 1);
		CHECK_EQ_STR(p->mappings[0].file, "/bin/x");
		CHECK_EQ_INT(p->locations[0].lines[0].line, 9);
		CHECK_EQ_STR(p->functions[p->locations[0].lines[0].function - 1].name, "f_a");
		CHECK_EQ_STR(p->functions[p->locations[1].lines[0].function - 1].name, "f_b");
		CHECK_EQ_INT(s->nlabels, 1);
		CHECK_EQ_STR(s->labels[0].key, "k");
		CHECK_EQ_STR(s->labels[0].str, "v");
	}
	ember__profile_free(p);
	ember__pb_free(&b);
}

/* A minimal valid profile body, onto which each bad case adds a field. */
static void base_profile(ember__pbuf *b)
{
	static const char *const strs[] = {"cpu", "nanoseconds"};
	put_strings(b, strs, 2);
	size_t m = ember__pb_begin(b, 1);
	ember__pb_uint64(b, 1, 1);
	ember__pb_uint64(b, 2, 2);
	ember__pb_end(b, m);
}

static void expect_error(ember__pbuf *b, const char *msg_part, const char *what)
{
	ember__profile *p = (ember__profile *)1;
	int err = ember__pprof_read(b->data, b->len, &p);
	CHECK_EQ_INT(err, EMBER_ERR_FORMAT);
	CHECK(p == NULL);
	if (!strstr(ember_last_error(), msg_part)) {
		fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, ember_last_error(),
			msg_part);
		CHECK(!"error message");
	}
	ember__pb_free(b);
}

static void test_bad_references(void)
{
	ember__pbuf b = EMBER_PBUF_INIT;
	size_t m, lm;

	/* Sample refers to a location that does not exist. */
	base_profile(&b);
	m = ember__pb_begin(&b, 2);
	ember__pb_uint64(&b, 1, 12);
	ember__pb_uint64(&b, 2, 1);
	ember__pb_end(&b, m);
	expect_error(&b, "missing location id 12", "missing location");

	/* Location refers to a missing mapping. */
	base_profile(&b);
	m = ember__pb_begin(&b, 4);
	ember__pb_uint64(&b, 1, 1);
	ember__pb_uint64(&b, 2, 99);
	ember__pb_end(&b, m);
	expect_error(&b, "missing mapping id 99", "missing mapping");

	/* Line refers to a missing function. */
	base_profile(&b);
	m = ember__pb_begin(&b, 4);
	ember__pb_uint64(&b, 1, 1);
	lm = ember__pb_begin(&b, 4);
	ember__pb_uint64(&b, 1, 5);
	ember__pb_end(&b, lm);
	ember__pb_end(&b, m);
	expect_error(&b, "missing function id 5", "missing function");

	/* Function name beyond the string table. */
	base_profile(&b);
	m = ember__pb_begin(&b, 5);
	ember__pb_uint64(&b, 1, 1);
	ember__pb_uint64(&b, 2, 3);
	ember__pb_end(&b, m);
	expect_error(&b, "function name refers to string 3", "string index");

	/* Negative string index in a label. */
	base_profile(&b);
	m = ember__pb_begin(&b, 2);
	ember__pb_uint64(&b, 2, 1);
	lm = ember__pb_begin(&b, 3);
	ember__pb_int64(&b, 1, -1);
	ember__pb_end(&b, lm);
	ember__pb_end(&b, m);
	expect_error(&b, "label of sample 1 refers to string", "negative string index");

	/* Duplicate ids. */
	base_profile(&b);
	for (int i = 0; i < 2; i++) {
		m = ember__pb_begin(&b, 5);
		ember__pb_uint64(&b, 1, 8);
		ember__pb_end(&b, m);
	}
	expect_error(&b, "duplicate function id 8", "duplicate id");

	/* Id 0. */
	base_profile(&b);
	m = ember__pb_begin(&b, 3);
	ember__pb_uint64(&b, 2, 0x1000);
	ember__pb_end(&b, m);
	expect_error(&b, "has id 0", "id 0");

	/* Too many sample types. */
	base_profile(&b);
	for (int i = 0; i < EMBER_PROFILE_MAX_VALUES; i++) {
		m = ember__pb_begin(&b, 1);
		ember__pb_end(&b, m);
	}
	expect_error(&b, "more than", "too many sample types");

	/* More values in a sample than sample types. */
	base_profile(&b);
	m = ember__pb_begin(&b, 2);
	int64_t vals[] = {1, 2, 3, 4, 5, 6};
	ember__pb_packed_int64(&b, 2, vals, 6);
	ember__pb_end(&b, m);
	expect_error(&b, "has 6 values", "too many values");

	/* A known field with the wrong wire type. */
	base_profile(&b);
	ember__pb_bytes(&b, 9, "x", 1);
	expect_error(&b, "expected varint", "wire type");

	/* No string table. */
	m = ember__pb_begin(&b, 1);
	ember__pb_end(&b, m);
	expect_error(&b, "no string table", "no strings");

	/* string_table[0] not empty. */
	ember__pb_bytes(&b, 6, "x", 1);
	expect_error(&b, "string_table[0]", "first string");

	/* Malformed protobuf: truncated. */
	base_profile(&b);
	b.len--;
	expect_error(&b, "protobuf", "truncated");
}

/* Many references to one long comment string are cut at 1 MiB. */
static void test_comment_cap(void)
{
	char *longs = malloc(1001);
	memset(longs, 'c', 1000);
	longs[1000] = '\0';
	const char *const strs[] = {"cpu", "nanoseconds", longs};
	ember__pbuf b = EMBER_PBUF_INIT;
	put_strings(&b, strs, 3);
	int64_t *refs = malloc(5000 * sizeof(*refs));
	for (int i = 0; i < 5000; i++)
		refs[i] = 3;
	ember__pb_packed_int64(&b, 13, refs, 5000);
	ember__profile *p = NULL;
	CHECK_EQ_INT(ember__pprof_read(b.data, b.len, &p), 0);
	if (p) {
		CHECK_EQ_INT(strlen(p->comment), 1 << 20);
		CHECK(strncmp(p->comment, longs, 1000) == 0 && p->comment[1000] == '\n');
	}
	ember__profile_free(p);
	ember__pb_free(&b);
	free(refs);
	free(longs);
}

static void test_bad_gzip(void)
{
	ember__profile *p = build_profile();
	uint8_t *gz = NULL;
	size_t gz_len = 0;
	CHECK_EQ_INT(ember__pprof_encode(p, &gz, &gz_len), 0);
	ember__profile_free(p);
	ember__profile *q = NULL;

	/* Every truncation fails cleanly. */
	for (size_t len = 2; len < gz_len; len += 1 + len / 16) {
		uint8_t *copy = malloc(len);
		memcpy(copy, gz, len);
		CHECK_EQ_INT(ember__pprof_read(copy, len, &q), EMBER_ERR_FORMAT);
		CHECK(q == NULL);
		free(copy);
	}
	/* Corruption in the deflate data or the CRC. */
	uint8_t *copy = malloc(gz_len);
	memcpy(copy, gz, gz_len);
	copy[gz_len - 6] ^= 0xff; /* CRC32 */
	CHECK_EQ_INT(ember__pprof_read(copy, gz_len, &q), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "gzip") != NULL);
	/* Trailing junk after the member. */
	uint8_t *two = malloc(gz_len * 2 + 3);
	memcpy(two, gz, gz_len);
	memcpy(two + gz_len, "xyz", 3);
	CHECK_EQ_INT(ember__pprof_read(two, gz_len + 3, &q), EMBER_ERR_FORMAT);
	/* Two concatenated members are one stream of twice the bytes: the
	 * decoded profile has each repeated entry twice, so ids repeat. */
	memcpy(two + gz_len, gz, gz_len);
	CHECK_EQ_INT(ember__pprof_read(two, 2 * gz_len, &q), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "duplicate") != NULL);
	free(two);
	free(copy);
	free(gz);

	/* Empty and NULL input. */
	CHECK_EQ_INT(ember__pprof_read((const uint8_t *)"", 0, &q), EMBER_ERR_FORMAT);
	CHECK_EQ_INT(ember__pprof_read(NULL, 5, &q), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember__pprof_read_file("/nonexistent/emberprof.pb.gz", &q), EMBER_ERR_IO);
	CHECK(strstr(ember_last_error(), "/nonexistent/emberprof.pb.gz") != NULL);
}

static void test_encoder_rejects_bad_model(void)
{
	ember__profile *p = build_profile();
	uint8_t *out = (uint8_t *)1;
	size_t len = 1;
	p->samples[1].locs[0] = 99;
	CHECK_EQ_INT(ember__pprof_encode(p, &out, &len), EMBER_ERR_INVALID);
	CHECK(out == NULL && len == 0);
	p->samples[1].locs[0] = 1;
	p->locations[0].mapping = 3;
	CHECK_EQ_INT(ember__pprof_encode(p, &out, &len), EMBER_ERR_INVALID);
	p->locations[0].mapping = 1;
	p->locations[0].lines[0].function = 5;
	CHECK_EQ_INT(ember__pprof_encode(p, &out, &len), EMBER_ERR_INVALID);
	p->locations[0].lines[0].function = 1;
	p->nvalues = EMBER_PROFILE_MAX_VALUES + 1;
	CHECK_EQ_INT(ember__pprof_encode(p, &out, &len), EMBER_ERR_INVALID);
	p->nvalues = 2;
	CHECK_EQ_INT(ember__pprof_encode(p, &out, &len), 0);
	free(out);
	ember__profile_free(p);

	/* An empty profile encodes and reads back empty. */
	p = ember__profile_new();
	CHECK_EQ_INT(ember__pprof_encode(p, &out, &len), 0);
	ember__profile *q = NULL;
	CHECK_EQ_INT(ember__pprof_read(out, len, &q), 0);
	if (q)
		CHECK(q->nsamples == 0 && q->nvalues == 0 && q->comment == NULL);
	ember__profile_free(q);
	free(out);
	ember__profile_free(p);
}

/* A window-sized profile: 10k samples of 30 frames over 2k functions.
 * Checks the round trip; prints the time for information only. */
static void test_large(void)
{
	ember__profile *p = ember__profile_new();
	p->nvalues = 1;
	p->sample_type[0] = (ember__value_type){S(p, "cpu"), S(p, "nanoseconds")};
	ember__mapping m = {0x1000, 0x100000000, 0, S(p, "/bin/big"), S(p, "b1d"), 1, 1, 1};
	ember__profile_add_mapping(p, &m);
	char name[64];
	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "function_number_%d", i);
		ember__function f = {S(p, name), S(p, name), S(p, "big.c"), i};
		ember__profile_add_function(p, &f);
		ember__line *ln = ember__arena_alloc(&p->arena, sizeof(*ln));
		*ln = (ember__line){(uint32_t)i + 1, i};
		ember__location l = {0x1000 + 16 * (uint64_t)i, 1, 1, ln};
		ember__profile_add_location(p, &l);
	}
	uint32_t seed = 7;
	for (int i = 0; i < 10000; i++) {
		ember__sample s;
		memset(&s, 0, sizeof(s));
		s.nlocs = 30;
		s.locs = ember__arena_alloc(&p->arena, 30 * sizeof(*s.locs));
		for (int k = 0; k < 30; k++) {
			seed = seed * 1103515245u + 12345u;
			s.locs[k] = 1 + (seed >> 8) % 2000;
		}
		s.values[0] = 10000000LL * (1 + i % 3);
		ember__profile_add_sample(p, &s);
	}
	struct timespec t0, t1, t2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint8_t *gz = NULL;
	size_t len = 0;
	CHECK_EQ_INT(ember__pprof_encode(p, &gz, &len), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ember__profile *q = NULL;
	CHECK_EQ_INT(ember__pprof_read(gz, len, &q), 0);
	clock_gettime(CLOCK_MONOTONIC, &t2);
	if (q) {
		compare_profiles(p, q);
		CHECK_EQ_INT(sum_values(q, 0), sum_values(p, 0));
	}
	printf("     large: %zu bytes gzip'd, encode %.1f ms, decode %.1f ms\n", len,
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
	       (t2.tv_sec - t1.tv_sec) * 1e3 + (t2.tv_nsec - t1.tv_nsec) / 1e6);
	free(gz);
	ember__profile_free(q);
	ember__profile_free(p);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof(tmpdir), "%s/emberprof-test-pprof-XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	/* go wants a home for its caches. */
	if (!getenv("HOME"))
		setenv("HOME", tmpdir, 1);

	RUN(test_roundtrip);
	RUN(test_go_tool_pprof);
	RUN(test_go_runtime_profiles);
	RUN(test_sparse_ids_unpacked);
	RUN(test_bad_references);
	RUN(test_comment_cap);
	RUN(test_bad_gzip);
	RUN(test_encoder_rejects_bad_model);
	RUN(test_large);
	/* go may have left caches here if HOME pointed at it. */
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return CHECK_DONE();
}
