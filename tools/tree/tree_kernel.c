/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_kernel.c - kernel callchains interned and named from /proc/kallsyms
 * (tree_kernel.h).
 */
#include "tree/tree_kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/hashmap.h"

typedef struct ksym {
	uint64_t addr;
	uint32_t name; /* offset in names */
} ksym;

typedef struct kchain {
	uint32_t off, n; /* in ips */
} kchain;

struct ember__tkern {
	ksym *syms;
	size_t nsyms;
	char *names;
	size_t names_len, names_cap;
	uint64_t lo, hi; /* the kernel text's range, for the mapping */
	char build_id[41];
	char why[160];
	int loaded; /* kallsyms read (load) */
	uint64_t *ips;
	size_t nips, capips;
	kchain *chains;
	size_t nchains, capchains;
	ember__u64map index; /* chain hash -> 1 + number (collisions: not merged) */
};

static int cmp_ksym(const void *a, const void *b)
{
	const ksym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int add_name(ember__tkern *k, const char *s, uint32_t *off)
{
	size_t n = strlen(s) + 1;
	if (k->names_len + n > k->names_cap) {
		size_t cap = k->names_cap ? 2 * k->names_cap : 1 << 20;
		while (cap < k->names_len + n)
			cap *= 2;
		char *p = realloc(k->names, cap);
		if (!p)
			return -1;
		k->names = p;
		k->names_cap = cap;
	}
	memcpy(k->names + k->names_len, s, n);
	*off = (uint32_t)k->names_len;
	k->names_len += n;
	return 0;
}

/* The kernel's GNU build id from /sys/kernel/notes (ELF notes), if any. */
static void read_build_id(ember__tkern *k)
{
	FILE *f = fopen("/sys/kernel/notes", "re");
	if (!f)
		return;
	uint8_t buf[4096];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	size_t p = 0;
	while (p + 12 <= n) {
		uint32_t namesz, descsz, type;
		memcpy(&namesz, buf + p, 4);
		memcpy(&descsz, buf + p + 4, 4);
		memcpy(&type, buf + p + 8, 4);
		size_t name = p + 12, desc = name + ((namesz + 3u) & ~3u);
		if (desc + descsz > n)
			return;
		if (type == 3 && namesz == 4 && !memcmp(buf + name, "GNU", 4) && descsz <= 20) {
			for (uint32_t i = 0; i < descsz; i++)
				snprintf(k->build_id + 2 * i, 3, "%02x", buf[desc + i]);
			return;
		}
		p = desc + ((descsz + 3u) & ~3u);
	}
}

int ember__tkern_new(ember__tkern **out)
{
	ember__tkern *k = calloc(1, sizeof(*k));
	if (!k)
		return ember__error_oom("kernel symbols");
	*out = k;
	return 0;
}

/* One line of /proc/kallsyms: "ADDR TYPE NAME[\t[MODULE]]". 0 if it is a
 * text symbol (t, T, w, W), with *addr and *name (NUL-terminated in
 * place), else -1. */
static int parse_line(char *line, uint64_t *addr, char **name)
{
	char *p = line;
	uint64_t a = 0;
	for (;; p++) {
		int d = *p >= '0' && *p <= '9'   ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
						 : -1;
		if (d < 0)
			break;
		a = a << 4 | (uint64_t)d;
	}
	if (*p != ' ' || !strchr("tTwW", p[1]) || !p[1] || p[2] != ' ')
		return -1;
	*name = p + 3;
	(*name)[strcspn(*name, "\t\n ")] = '\0';
	*addr = a;
	return **name ? 0 : -1;
}

/* Reads /proc/kallsyms the first time a chain is named: about 0.1 s of
 * CPU for its ~100,000 lines, paid by runs that have kernel samples. */
static void load(ember__tkern *k)
{
	if (k->loaded)
		return;
	k->loaded = 1;
	FILE *f = fopen("/proc/kallsyms", "re");
	if (!f) {
		snprintf(k->why, sizeof(k->why), "/proc/kallsyms cannot be read");
		return;
	}
	char line[512];
	size_t cap = 0;
	while (fgets(line, sizeof(line), f)) {
		uint64_t a;
		char *name;
		if (parse_line(line, &a, &name) != 0 || !a)
			continue;
		if (k->nsyms == cap) {
			cap = cap ? 2 * cap : 65536;
			ksym *s = realloc(k->syms, cap * sizeof(*s));
			if (!s)
				break;
			k->syms = s;
		}
		ksym s = {a, 0};
		if (add_name(k, name, &s.name) != 0)
			break;
		k->syms[k->nsyms++] = s;
	}
	fclose(f);
	if (!k->nsyms) {
		FILE *r = fopen("/proc/sys/kernel/kptr_restrict", "re");
		int kr = -1;
		if (r) {
			if (fscanf(r, "%d", &kr) != 1)
				kr = -1;
			fclose(r);
		}
		snprintf(k->why, sizeof(k->why),
			 "/proc/kallsyms gives no addresses here (kernel.kptr_restrict %d%s)", kr,
			 kr == 1 ? ", and no CAP_SYSLOG" : "");
		return;
	}
	qsort(k->syms, k->nsyms, sizeof(*k->syms), cmp_ksym);
	k->lo = k->syms[0].addr;
	k->hi = k->syms[k->nsyms - 1].addr + 4096;
	read_build_id(k);
}

void ember__tkern_free(ember__tkern *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->names);
	free(k->ips);
	free(k->chains);
	ember__u64map_free(&k->index);
	free(k);
}

int ember__tkern_named(ember__tkern *k)
{
	load(k);
	return k->nsyms > 0;
}

const char *ember__tkern_why(ember__tkern *k)
{
	load(k);
	return k->why;
}

uint32_t ember__tkern_intern(ember__tkern *k, const uint64_t *ips, uint32_t n)
{
	uint64_t h = ember__hash_bytes(ips, n * sizeof(*ips), n);
	int inserted;
	uint64_t *v = ember__u64map_put(&k->index, h, &inserted);
	if (v && !inserted && *v) {
		const kchain *c = &k->chains[*v - 1];
		if (c->n == n && !memcmp(k->ips + c->off, ips, n * sizeof(*ips)))
			return (uint32_t)*v;
		v = NULL; /* another chain of that hash: kept apart */
	}
	if (k->nips + n > k->capips) {
		size_t cap = k->capips ? 2 * k->capips : 4096;
		while (cap < k->nips + n)
			cap *= 2;
		uint64_t *p = realloc(k->ips, cap * sizeof(*p));
		if (!p)
			return 0;
		k->ips = p;
		k->capips = cap;
	}
	if (k->nchains == k->capchains) {
		size_t cap = k->capchains ? 2 * k->capchains : 256;
		kchain *p = realloc(k->chains, cap * sizeof(*p));
		if (!p)
			return 0;
		k->chains = p;
		k->capchains = cap;
	}
	memcpy(k->ips + k->nips, ips, n * sizeof(*ips));
	k->chains[k->nchains++] = (kchain){(uint32_t)k->nips, n};
	k->nips += n;
	if (v)
		*ember__u64map_get(&k->index, h) = k->nchains;
	return (uint32_t)k->nchains;
}

/* The name of the function at addr, or NULL. */
static const char *lookup(const ember__tkern *k, uint64_t addr)
{
	if (!k->nsyms || addr < k->syms[0].addr)
		return NULL;
	size_t lo = 0, hi = k->nsyms;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (k->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return k->names + k->syms[lo].name;
}

/* Per profile: its kernel mapping, and the locations made so far. */
typedef struct applier {
	ember__tkern *k;
	ember__profile *p;
	uint32_t mapping;
	ember__u64map locs;  /* address -> location */
	ember__u64map funcs; /* name offset + 1 (0: [kernel]) -> function */
} applier;

static uint32_t function_of(applier *a, const char *name, uint64_t key)
{
	int inserted;
	uint64_t *v = ember__u64map_put(&a->funcs, key, &inserted);
	if (!v)
		return 0;
	if (!inserted)
		return (uint32_t)*v;
	const char *n = ember__profile_strdup(a->p, name);
	ember__function f = {n, n, ember__profile_strdup(a->p, ""), 0};
	uint32_t idx = n && f.filename ? ember__profile_add_function(a->p, &f) : 0;
	*ember__u64map_get(&a->funcs, key) = idx;
	return idx;
}

/* The location of a kernel frame: `leaf`, the interrupted IP; else a
 * return address, named by the call before it. Named: 0 for [kernel]. */
static uint32_t location_of(applier *a, uint64_t addr, int leaf)
{
	int inserted;
	uint64_t *v = ember__u64map_put(&a->locs, addr, &inserted);
	if (!v)
		return 0;
	if (!inserted)
		return (uint32_t)*v;
	const char *name = addr ? lookup(a->k, leaf ? addr : addr - 1) : NULL;
	uint32_t fn = name ? function_of(a, name, (uint64_t)(name - a->k->names) + 1)
			   : function_of(a, "[kernel]", 0);
	ember__line *line = ember__arena_alloc(&a->p->arena, sizeof(*line));
	if (!fn || !line)
		return 0;
	*line = (ember__line){fn, 0};
	ember__location l = {addr, a->mapping, 1, line};
	uint32_t idx = ember__profile_add_location(a->p, &l);
	*ember__u64map_get(&a->locs, addr) = idx;
	return idx;
}

int ember__tkern_apply(ember__tkern *k, ember__profile *p)
{
	load(k);
	applier a = {k, p, 0, EMBER_U64MAP_INIT, EMBER_U64MAP_INIT};
	int rc = 0;
	for (uint32_t i = 0; i < p->nsamples && rc == 0; i++) {
		ember__sample *s = &p->samples[i];
		uint32_t id = 0, w = 0;
		for (uint32_t j = 0; j < s->nlabels; j++) {
			if (s->labels[j].str && !strcmp(s->labels[j].key, EMBER_TKERN_LABEL))
				id = (uint32_t)strtoul(s->labels[j].str, NULL, 10);
			else
				s->labels[w++] = s->labels[j];
		}
		s->nlabels = w;
		if (!id || id > k->nchains)
			continue;
		if (!a.mapping) {
			ember__mapping m = {k->lo, k->hi, 0, ember__profile_strdup(p, "[kernel.kallsyms]"),
					    ember__profile_strdup(p, k->build_id), k->nsyms > 0, 0, 0};
			if (!m.file || !m.build_id || !(a.mapping = ember__profile_add_mapping(p, &m))) {
				rc = -1;
				break;
			}
		}
		const kchain *c = &k->chains[id - 1];
		/* named: every frame; else one [kernel] frame (address 0) */
		uint32_t nk = k->nsyms ? c->n : 1;
		uint32_t *locs = ember__arena_alloc(&p->arena, (nk + s->nlocs) * sizeof(*locs));
		if (!locs) {
			rc = -1;
			break;
		}
		for (uint32_t d = 0; d < nk && rc == 0; d++)
			if (!(locs[d] = location_of(&a, k->nsyms ? k->ips[c->off + d] : 0, d == 0)))
				rc = -1;
		memcpy(locs + nk, s->locs, s->nlocs * sizeof(*locs));
		s->locs = locs;
		s->nlocs += nk;
	}
	ember__u64map_free(&a.locs);
	ember__u64map_free(&a.funcs);
	return rc ? ember__error_oom("kernel frames") : 0;
}
