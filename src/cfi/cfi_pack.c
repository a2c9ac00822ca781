/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cfi_pack.c - packs a module's finished unwind rows into the compact form
 * the handler reads (cfi_pack.h; the format: ember__cfi_packed in
 * src/unwind/unwind.h, the lookup: src/unwind/unwind_dwarf.c).
 */
#include "cfi/cfi_pack.h"

#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "util/error.h"

#define PAGE_BYTES (1u << EMBER_CFI_PAGE_SHIFT)
#define LOW_MASK (PAGE_BYTES - 1)

static int is_signal_rule(uint32_t rule)
{
	return (ember__cfi_rule_kind(rule) & EMBER_CFI_KIND_MASK) == EMBER_CFI_SIGNAL;
}

static uint32_t rule_hash(uint32_t k, uint32_t cap)
{
	return (k * 0x9e3779b1u) >> 7 & (cap - 1);
}

/* Doubles the rule hash (or makes it: 512 slots) and re-inserts the
 * nrules rules of distinct[]. 0 or EMBER_ERR_NOMEM. */
static int grow_rules(uint32_t *cap, uint32_t nrules, uint32_t **keys, uint32_t **ids,
		      uint32_t **distinct)
{
	uint32_t ncap = *cap ? 2 * *cap : 512;
	uint32_t *k = malloc((size_t)ncap * sizeof(*k)), *d = malloc((size_t)ncap * sizeof(*d));
	uint32_t *dist = realloc(*distinct, ((size_t)ncap / 2 + 1) * sizeof(*dist));
	if (dist)
		*distinct = dist;
	if (!k || !d || !dist) {
		free(k);
		free(d);
		return EMBER_ERR_NOMEM;
	}
	memset(d, 0xff, (size_t)ncap * sizeof(*d));
	for (uint32_t r = 0; r < nrules; r++) {
		uint32_t h = rule_hash(dist[r], ncap);
		while (d[h] != UINT32_MAX)
			h = (h + 1) & (ncap - 1);
		k[h] = dist[r];
		d[h] = r;
	}
	free(*keys);
	free(*ids);
	*keys = k;
	*ids = d;
	*cap = ncap;
	return 0;
}

int ember__cfi_pack_rows(const ember__cfi_row *rows, uint32_t n, void **block, size_t *len,
			 ember__cfi_packed *out)
{
	*block = NULL;
	*len = 0;
	int rc = EMBER_ERR_NOMEM;
	uint32_t page0 = rows[0].pc >> EMBER_CFI_PAGE_SHIFT;
	uint32_t npages = (rows[n - 1].pc >> EMBER_CFI_PAGE_SHIFT) - page0 + 1;
	/* Distinct rules, by an open-addressing hash of their packed value,
	 * at most half full: it grows with the rules (a few thousand in a
	 * large library), not with the rows, so that packing touches little
	 * fresh memory. A row's first rule number fits 16 bits. */
	uint32_t cap = 0, nrules = 0;
	uint32_t *keys = NULL, *ids = NULL, *distinct = NULL;
	uint16_t *rule_of = malloc((size_t)n * sizeof(*rule_of));
	uint8_t *wblock = NULL;
	if (!rule_of)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		if (2 * nrules >= cap && grow_rules(&cap, nrules, &keys, &ids, &distinct) != 0)
			goto out;
		uint32_t k = ember__cfi_rule_pack(&rows[i]);
		uint32_t h = rule_hash(k, cap);
		while (ids[h] != UINT32_MAX && keys[h] != k)
			h = (h + 1) & (cap - 1);
		if (ids[h] == UINT32_MAX) {
			if (nrules == EMBER_CFI_RULES_MAX) {
				rc = 1;
				goto out;
			}
			keys[h] = k;
			ids[h] = nrules;
			distinct[nrules++] = k;
		}
		rule_of[i] = (uint16_t)ids[h];
	}
	/* Renumber: SIGNAL rules first (unwind.h). ids is reused as the map
	 * from a rule's first number to its final one. */
	uint32_t nsignal = 0;
	for (uint32_t r = 0; r < nrules; r++)
		nsignal += is_signal_rule(distinct[r]);
	uint32_t sig = 0, next = nsignal;
	for (uint32_t r = 0; r < nrules; r++)
		ids[r] = is_signal_rule(distinct[r]) ? sig++ : next++;

	size_t size = ember__cfi_packed_layout(n, nrules, npages, NULL, NULL);
	wblock = malloc(size);
	if (!wblock)
		goto out;
	ember__cfi_packed p;
	ember__cfi_packed_layout(n, nrules, npages, wblock, &p);
	uint32_t *wrows = (uint32_t *)wblock, *wrules = wrows + n, *wpages = wrules + nrules;
	uint16_t *wfine = (uint16_t *)(wpages + npages + 1);
	for (uint32_t i = 0; i < n; i++)
		wrows[i] = (rows[i].pc & LOW_MASK) | ids[rule_of[i]] << 16;
	for (uint32_t r = 0; r < nrules; r++)
		wrules[ids[r]] = distinct[r];
	uint32_t at = 0; /* the first row at or above the address considered */
	for (uint32_t pg = 0; pg <= npages; pg++) {
		uint64_t start = (uint64_t)(page0 + pg) << EMBER_CFI_PAGE_SHIFT;
		while (at < n && rows[at].pc < start)
			at++;
		wpages[pg] = at;
		if (pg == npages)
			break;
		uint32_t first = at;
		for (uint32_t b = 0; b < EMBER_CFI_FINE_PER_PAGE; b++) {
			uint64_t bstart = start + ((uint64_t)b << EMBER_CFI_INDEX_SHIFT);
			while (at < n && rows[at].pc < bstart)
				at++;
			if (at - first > UINT16_MAX) { /* only rows sharing a pc could */
				rc = 1;
				goto out;
			}
			wfine[(size_t)pg * EMBER_CFI_FINE_PER_PAGE + b] = (uint16_t)(at - first);
		}
		at = first;
	}
	p.nsignal = nsignal;
	p.page0 = page0;
	*out = p;
	*block = wblock;
	*len = size;
	wblock = NULL;
	rc = 0;
out:
	free(keys);
	free(ids);
	free(distinct);
	free(rule_of);
	free(wblock);
	return rc;
}

int ember__cfi_pack(ember__cfi_table *t)
{
	if (t->nrows == 0 || !t->rows)
		return 0;
	void *block;
	size_t len;
	ember__cfi_packed p;
	int rc = ember__cfi_pack_rows(t->rows, t->nrows, &block, &len, &p);
	if (rc == 1) {
		t->stats.unpacked_rules = 1;
		return 0;
	}
	if (rc)
		return ember__error_oom("packed CFI table");
	size_t unpacked = (size_t)t->nrows * sizeof(*t->rows) + (size_t)t->nindex * sizeof(*t->index);
	if (len >= unpacked) {
		free(block);
		t->stats.unpacked_small = 1;
		return 0;
	}
	free(t->rows);
	free(t->index);
	t->rows = NULL;
	t->index = NULL;
	t->nindex = t->index_shift = 0;
	t->packed = p;
	t->block = block;
	t->block_len = len;
	t->bytes = sizeof(*t) + len;
	return 0;
}

int ember__cfi_packed_check(const ember__cfi_packed *p)
{
	if (p->nrows == 0 || p->npages == 0 || p->nrules == 0)
		return ember__error(EMBER_ERR_FORMAT, "empty packed table (%u rows, %u pages, %u rules)",
				    p->nrows, p->npages, p->nrules);
	if (p->nrules > EMBER_CFI_RULES_MAX || p->nsignal > p->nrules)
		return ember__error(EMBER_ERR_FORMAT, "%u rules, %u of them SIGNAL", p->nrules,
				    p->nsignal);
	if ((uint64_t)p->page0 + p->npages > ((uint64_t)1 << (32 - EMBER_CFI_PAGE_SHIFT)))
		return ember__error(EMBER_ERR_FORMAT, "pages %u + %u beyond 32-bit offsets", p->page0,
				    p->npages);
	for (uint32_t r = 0; r < p->nrules; r++)
		if (is_signal_rule(p->rules[r]) != (r < p->nsignal))
			return ember__error(EMBER_ERR_FORMAT, "rule %u: SIGNAL rules must come first", r);
	if (p->pages[0] != 0 || p->pages[p->npages] != p->nrows || p->pages[1] == 0 ||
	    p->pages[p->npages - 1] >= p->nrows)
		return ember__error(EMBER_ERR_FORMAT, "page index does not span the rows");
	for (uint32_t pg = 0; pg < p->npages; pg++) {
		uint32_t first = p->pages[pg], end = p->pages[pg + 1];
		if (end < first || end - first > PAGE_BYTES)
			return ember__error(EMBER_ERR_FORMAT, "page %u: rows out of order", pg);
		const uint16_t *f = p->fine + (size_t)pg * EMBER_CFI_FINE_PER_PAGE;
		if (f[0] != 0)
			return ember__error(EMBER_ERR_FORMAT, "page %u: bucket 0 not at its first row", pg);
		for (uint32_t b = 1; b < EMBER_CFI_FINE_PER_PAGE; b++)
			if (f[b] < f[b - 1] || f[b] > end - first)
				return ember__error(EMBER_ERR_FORMAT, "page %u bucket %u out of order", pg,
						    b);
	}
	return 0;
}

int ember__cfi_table_row(const ember__cfi_table *t, uint32_t i, ember__cfi_row *out)
{
	if (t->packed.nrows)
		return ember__cfi_packed_row(&t->packed, i, out);
	if (i >= t->nrows || !t->rows)
		return 0;
	*out = t->rows[i];
	return 1;
}

int ember__cfi_table_find(const ember__cfi_table *t, uint32_t pc, ember__cfi_row *out)
{
	ember__unwind_module m;
	memset(&m, 0, sizeof(m));
	ember__cfi_table_to_module(t, &m);
	return ember__unwind_module_row(&m, pc, out);
}

void ember__cfi_table_to_module(const ember__cfi_table *t, ember__unwind_module *m)
{
	m->packed = t->packed;
	m->rows = t->rows;
	m->nrows = t->rows ? t->nrows : 0;
	m->index = t->index;
	m->nindex = t->index ? t->nindex : 0;
	m->index_shift = t->index_shift;
}
