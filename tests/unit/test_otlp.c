/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_otlp.c - the OTLP profiles encoder (src/encode/otlp.c) and reader
 * (tools/convert/otlp_read.c), without the official protos (the receiver
 * test, tests/otlp/, decodes with descriptors generated from them).
 *
 * Two hand-built window profiles sharing functions and mappings (a CPU
 * profile with two sample types, a memory one with four) are encoded as
 * one request; then, with the project's protobuf reader:
 *   - the request has one resource (attributes as given) and one scope;
 *   - every dictionary table starts with the empty (zero) entry and holds
 *     no entry twice; shared mappings/functions appear once;
 *   - each Profile has one sample type, time, duration, period;
 *   - read back, the request gives the two profiles again, per stack and
 *     value for value, labels and build IDs included;
 *   - a bad index is refused with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "convert/otlp_read.h"
#include "emberprof.h"
#include "encode/otlp.h"
#include "encode/protobuf.h"

static const char *S(ember__profile *p, const char *s)
{
	return ember__profile_strdup(p, s);
}

static uint32_t loc(ember__profile *p, uint64_t addr, uint32_t m, uint32_t fn, int64_t line)
{
	ember__location l = {addr, m, fn ? 1 : 0, NULL};
	if (fn) {
		l.lines = ember__arena_alloc(&p->arena, sizeof(*l.lines));
		l.lines[0] = (ember__line){fn, line};
	}
	return ember__profile_add_location(p, &l);
}

static void sample(ember__profile *p, const uint32_t *locs, uint32_t n, const int64_t *v,
		   const ember__label *lab, uint32_t nlab)
{
	ember__sample s;
	memset(&s, 0, sizeof(s));
	s.locs = ember__arena_alloc(&p->arena, n * sizeof(*s.locs));
	memcpy(s.locs, locs, n * sizeof(*s.locs));
	s.nlocs = n;
	memcpy(s.values, v, p->nvalues * sizeof(*v));
	if (nlab) {
		s.labels = ember__arena_alloc(&p->arena, nlab * sizeof(*lab));
		memcpy(s.labels, lab, nlab * sizeof(*lab));
		s.nlabels = nlab;
	}
	ember__profile_add_sample(p, &s);
}

/* A window profile: the same two mappings and three functions each time. */
static ember__profile *make(int memory)
{
	ember__profile *p = ember__profile_new();
	if (memory) {
		static const char *t[4][2] = {{"alloc_objects", "count"}, {"alloc_space", "bytes"},
					      {"inuse_objects", "count"}, {"inuse_space", "bytes"}};
		p->nvalues = 4;
		for (int i = 0; i < 4; i++)
			p->sample_type[i] = (ember__value_type){S(p, t[i][0]), S(p, t[i][1])};
		p->period_type = (ember__value_type){S(p, "space"), S(p, "bytes")};
		p->period = 524288;
	} else {
		p->nvalues = 2;
		p->sample_type[0] = (ember__value_type){S(p, "samples"), S(p, "count")};
		p->sample_type[1] = (ember__value_type){S(p, "cpu"), S(p, "nanoseconds")};
		p->period_type = p->sample_type[1];
		p->period = 10000000;
	}
	p->time_nanos = 1700000000000000000LL;
	p->duration_nanos = 10000000000LL;
	ember__mapping m1 = {0x400000, 0x500000, 0, S(p, "/usr/bin/demo"), S(p, "0123abcd"), 1, 1, 1};
	ember__mapping m2 = {0x7f0000000000, 0x7f0000200000, 0x28000, S(p, "/lib/libc.so.6"),
			     S(p, ""), 1, 0, 0};
	ember__profile_add_mapping(p, &m1);
	ember__profile_add_mapping(p, &m2);
	ember__function f[] = {{S(p, "main"), S(p, "main"), S(p, "main.c"), 3},
			       {S(p, "work(int)"), S(p, "_Z4worki"), S(p, "work.c"), 9},
			       {S(p, "malloc"), S(p, "malloc"), S(p, ""), 0}};
	for (int i = 0; i < 3; i++)
		ember__profile_add_function(p, &f[i]);
	uint32_t lm = loc(p, 0x401000, 1, 1, 5), lw = loc(p, 0x402000, 1, 2, 11);
	uint32_t lx = loc(p, 0x7f0000001000, 2, 3, 0), lu = loc(p, 0xdead, 0, 0, 0);
	ember__label lab[] = {{S(p, "env"), S(p, "prod"), 0, NULL},
			      {S(p, "thread_id"), NULL, 42, NULL},
			      {S(p, "size"), NULL, 64, S(p, "bytes")}};
	if (memory) {
		sample(p, (uint32_t[]){lx, lw, lm}, 3, (int64_t[]){2, 1024, 1, 512}, lab, 1);
		sample(p, (uint32_t[]){lx, lm}, 2, (int64_t[]){1, 64, 0, 0}, lab, 3);
	} else {
		sample(p, (uint32_t[]){lw, lm}, 2, (int64_t[]){7, 70000000}, lab, 2);
		sample(p, (uint32_t[]){lu, lm}, 2, (int64_t[]){1, 9000000}, NULL, 0);
		sample(p, (uint32_t[]){lw, lm}, 2, (int64_t[]){3, 30000000}, lab, 1);
	}
	return p;
}

/* A line per sample: frames (mapping file, address, function:line), labels, values. */
static char *digest(const ember__profile *p)
{
	size_t cap = 1 << 16, n = 0;
	char *out = calloc(1, cap);
	for (uint32_t t = 0; t < p->nvalues; t++)
		n += (size_t)snprintf(out + n, cap - n, "type %s/%s\n", p->sample_type[t].type,
				      p->sample_type[t].unit);
	n += (size_t)snprintf(out + n, cap - n, "period %s/%s %lld time %lld dur %lld\n",
			      p->period_type.type ? p->period_type.type : "",
			      p->period_type.unit ? p->period_type.unit : "", (long long)p->period,
			      (long long)p->time_nanos, (long long)p->duration_nanos);
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const ember__sample *s = &p->samples[i];
		for (uint32_t k = 0; k < s->nlocs; k++) {
			const ember__location *l = &p->locations[s->locs[k] - 1];
			const ember__mapping *m = l->mapping ? &p->mappings[l->mapping - 1] : NULL;
			n += (size_t)snprintf(out + n, cap - n, "%s[%s]@%llx", m ? m->file : "-",
					      m ? m->build_id : "", (unsigned long long)l->address);
			for (uint32_t j = 0; j < l->nlines; j++) {
				const ember__function *f = &p->functions[l->lines[j].function - 1];
				n += (size_t)snprintf(out + n, cap - n, ":%s/%s/%s/%lld:%lld", f->name,
						      f->system_name, f->filename,
						      (long long)f->start_line,
						      (long long)l->lines[j].line);
			}
			n += (size_t)snprintf(out + n, cap - n, ";");
		}
		for (uint32_t k = 0; k < s->nlabels; k++) {
			const ember__label *l = &s->labels[k];
			if (l->str)
				n += (size_t)snprintf(out + n, cap - n, " %s=%s", l->key, l->str);
			else
				n += (size_t)snprintf(out + n, cap - n, " %s=%lld%s", l->key,
						      (long long)l->num, l->num_unit ? l->num_unit : "");
		}
		for (uint32_t t = 0; t < p->nvalues; t++)
			n += (size_t)snprintf(out + n, cap - n, " v%u=%lld", t, (long long)s->values[t]);
		n += (size_t)snprintf(out + n, cap - n, "\n");
	}
	return out;
}

static const ember__otlp_attr resource[] = {
	{"service.name", "demo", 0}, {"process.pid", NULL, 1234}, {"host.arch", "amd64", 0}};

static int encode(ember__profile *const *p, size_t n, uint8_t **out, size_t *len)
{
	ember__otlp_window w = {.resource = resource, .nresource = 3, .scope_name = "emberprof",
				.scope_version = EMBER_VERSION_STRING,
				.profiles = (const ember__profile *const *)p, .nprofiles = n,
				.profile_ids = 1};
	return ember__otlp_encode(&w, out, len);
}

/* Walks the request's dictionary: zero entries first, no duplicates. */
static void check_dictionary(const uint8_t *data, size_t len, size_t counts[8])
{
	ember__pb_reader r, dr;
	ember__pb_field f, df;
	const uint8_t *ent[8][256];
	size_t entlen[8][256];
	memset(counts, 0, 8 * sizeof(size_t));
	ember__pb_reader_init(&r, data, len);
	int ndict = 0;
	while (ember__pb_next(&r, &f) == 1) {
		if (f.num != EMBER_OTLP_REQ_DICTIONARY)
			continue;
		ndict++;
		ember__pb_reader_init(&dr, f.data, f.len);
		while (ember__pb_next(&dr, &df) == 1) {
			CHECK(df.num >= 1 && df.num <= 7 && df.wire == EMBER_PB_LEN);
			if (df.num < 1 || df.num > 7)
				continue;
			size_t k = counts[df.num]++;
			if (k == 0)
				CHECK_EQ_INT(df.len, 0); /* the zero value */
			if (k >= 256)
				continue;
			for (size_t j = 0; j < k; j++)
				if (entlen[df.num][j] == df.len &&
				    !memcmp(ent[df.num][j], df.data, df.len)) {
					fprintf(stderr, "table %u: entry %zu repeats entry %zu\n",
						df.num, k, j);
					CHECK(0);
				}
			ent[df.num][k] = df.data;
			entlen[df.num][k] = df.len;
		}
	}
	CHECK_EQ_INT(ndict, 1);
}

static void test_roundtrip(void)
{
	ember__profile *p[2] = {make(0), make(1)};
	uint8_t *body = NULL;
	size_t len = 0;
	CHECK_EQ_INT(encode(p, 2, &body, &len), 0);
	size_t counts[8];
	check_dictionary(body, len, counts);
	/* shared by both profiles, written once: 2 mappings, 3 functions (+ zero) */
	CHECK_EQ_INT(counts[EMBER_OTLP_DICT_MAPPING], 3);
	CHECK_EQ_INT(counts[EMBER_OTLP_DICT_FUNCTION], 4);
	CHECK_EQ_INT(counts[EMBER_OTLP_DICT_LOCATION], 5);
	CHECK_EQ_INT(counts[EMBER_OTLP_DICT_LINK], 1);
	/* stacks: (w,m) (u,m) (x,w,m) (x,m) */
	CHECK_EQ_INT(counts[EMBER_OTLP_DICT_STACK], 5);
	/* env=prod, thread_id=42, size=64 bytes, the build id */
	CHECK_EQ_INT(counts[EMBER_OTLP_DICT_ATTRIBUTE], 5);

	ember__otlp_read_result r;
	int rc = ember__otlp_read(body, len, &r);
	CHECK_EQ_INT(rc, 0);
	if (rc)
		fprintf(stderr, "%s\n", ember_last_error());
	CHECK_EQ_INT(r.notlp_profiles, 6);
	CHECK_EQ_INT(r.nprofiles, 2);
	CHECK_EQ_INT(r.nresource, 3);
	if (r.nresource == 3) {
		CHECK_EQ_STR(r.resource[0].key, "service.name");
		CHECK_EQ_STR(r.resource[0].value, "demo");
		CHECK_EQ_STR(r.resource[1].value, "1234");
	}
	CHECK_EQ_STR(r.scope_name, "emberprof");
	CHECK_EQ_STR(r.scope_version, EMBER_VERSION_STRING);
	for (size_t i = 0; i < 2 && i < r.nprofiles; i++) {
		char *a = digest(p[i]), *b = digest(r.profiles[i]);
		CHECK_EQ_STR(b, a);
		free(a);
		free(b);
	}
	ember__otlp_read_free(&r);
	free(body);
	ember__profile_free(p[0]);
	ember__profile_free(p[1]);
}

/* Each Profile: one sample_type, the time as fixed64, a 16-byte id. */
static void test_profile_fields(void)
{
	ember__profile *p[1] = {make(0)};
	uint8_t *body = NULL;
	size_t len = 0;
	CHECK_EQ_INT(encode(p, 1, &body, &len), 0);
	ember__pb_reader r, x;
	ember__pb_field f, g;
	int nprof = 0;
	ember__pb_reader_init(&r, body, len);
	while (ember__pb_next(&r, &f) == 1) {
		if (f.num != EMBER_OTLP_REQ_RESOURCE_PROFILES)
			continue;
		ember__pb_reader_init(&x, f.data, f.len);
		while (ember__pb_next(&x, &g) == 1) {
			if (g.num != EMBER_OTLP_RP_SCOPE_PROFILES)
				continue;
			ember__pb_reader s;
			ember__pb_field h;
			ember__pb_reader_init(&s, g.data, g.len);
			while (ember__pb_next(&s, &h) == 1) {
				if (h.num != EMBER_OTLP_SP_PROFILES)
					continue;
				nprof++;
				ember__pb_reader q;
				ember__pb_field e;
				int ntypes = 0, time = 0, id = 0, nsamples = 0;
				ember__pb_reader_init(&q, h.data, h.len);
				while (ember__pb_next(&q, &e) == 1) {
					ntypes += e.num == EMBER_OTLP_PROFILE_SAMPLE_TYPE;
					nsamples += e.num == EMBER_OTLP_PROFILE_SAMPLES;
					if (e.num == EMBER_OTLP_PROFILE_TIME) {
						CHECK_EQ_INT(e.wire, EMBER_PB_FIXED64);
						CHECK(e.u == 1700000000000000000ull);
						time = 1;
					}
					if (e.num == EMBER_OTLP_PROFILE_ID) {
						CHECK_EQ_INT(e.len, 16);
						id = 1;
					}
				}
				CHECK_EQ_INT(ntypes, 1);
				CHECK_EQ_INT(nsamples, 3);
				CHECK(time && id);
			}
		}
	}
	CHECK_EQ_INT(nprof, 2);
	free(body);
	ember__profile_free(p[0]);
}

/* A stack index past the table is refused, naming it. */
static void test_bad_index(void)
{
	ember__pbuf b = EMBER_PBUF_INIT;
	size_t rp = ember__pb_begin(&b, EMBER_OTLP_REQ_RESOURCE_PROFILES);
	size_t sp = ember__pb_begin(&b, EMBER_OTLP_RP_SCOPE_PROFILES);
	size_t pr = ember__pb_begin(&b, EMBER_OTLP_SP_PROFILES);
	size_t sm = ember__pb_begin(&b, EMBER_OTLP_PROFILE_SAMPLES);
	ember__pb_uint64(&b, EMBER_OTLP_SAMPLE_STACK, 5);
	ember__pb_end(&b, sm);
	ember__pb_end(&b, pr);
	ember__pb_end(&b, sp);
	ember__pb_end(&b, rp);
	size_t d = ember__pb_begin(&b, EMBER_OTLP_REQ_DICTIONARY);
	ember__pb_bytes(&b, EMBER_OTLP_DICT_STACK, "", 0);
	ember__pb_end(&b, d);
	ember__otlp_read_result r;
	CHECK_EQ_INT(ember__otlp_read(b.data, b.len, &r), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "stack index 5") != NULL);
	ember__otlp_read_free(&r);
	ember__pb_free(&b);
}

int main(void)
{
	RUN(test_roundtrip);
	RUN(test_profile_fields);
	RUN(test_bad_index);
	return CHECK_DONE();
}
