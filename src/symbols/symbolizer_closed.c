/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolizer_closed.c - libraries the program dlclose'd before a refresh
 * saw them mapped, from the dlclose journal (dlclosed.h), into the
 * symbolizer's tables (symbolizer_internal.h) as gone modules.
 *
 * A refresh takes the journal's records; report_dwfl chooses those whose
 * addresses no image mapped now holds, newest first (a later library
 * loaded at the same place takes the addresses, as for a module that was
 * learned: see keep_gone in symbolizer.c), reports each to libdwfl by
 * path and range, as if still mapped; rebuild_modules then adds one
 * module per code segment, already gone, unless the file at that path now
 * has another build id than the library had (replaced since): that one
 * stays unnamed rather than named from another file. From the next
 * refresh on they are kept or dropped as any gone module is. A file
 * deleted since cannot be opened: its module has no names, and is counted
 * among the unreadable files with the reason.
 *
 * Agent thread only; not async-signal-safe.
 */
#include "symbols/symbolizer_internal.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/elfnote.h"
#include "util/error.h"

static uint64_t page_size(void)
{
	static uint64_t ps;
	if (!ps) {
		long p = sysconf(_SC_PAGESIZE);
		ps = p > 0 ? (uint64_t)p : 4096;
	}
	return ps;
}

/* The range libdwfl is told, as report_dwfl tells it for a mapped image:
 * from where the first segment's page was loaded (so that libdwfl, which
 * takes the bias from the lowest address and that segment's p_vaddr
 * rounded down to its p_align, finds the record's base) to the end of the
 * last segment. */
static void rec_range(const ember__dlclosed_rec *r, uint64_t *lo, uint64_t *hi)
{
	const ember__dlclosed_seg *first = &r->segs[0];
	uint64_t a = first->align && !(first->align & (first->align - 1)) ? first->align : page_size();
	*lo = r->base + (first->vaddr & ~(a - 1));
	*hi = 0;
	for (uint32_t i = 0; i < r->nsegs; i++) {
		uint64_t end = r->base + r->segs[i].vaddr + r->segs[i].memsz;
		end = (end + page_size() - 1) & ~(page_size() - 1);
		if (end > *hi)
			*hi = end;
	}
}

/* The mapping the loader made for code segment `seg` of r. */
static void seg_map(const ember__dlclosed_rec *r, const ember__dlclosed_seg *seg, ember__procmap *pm)
{
	uint64_t ps = page_size(), at = r->base + seg->vaddr;
	uint64_t start = at & ~(ps - 1), end = (at + seg->memsz + ps - 1) & ~(ps - 1);
	uint64_t lead = at - start;
	*pm = (ember__procmap){.start = start,
			       .end = end,
			       .perms = EMBER_MAP_READ | EMBER_MAP_EXEC | EMBER_MAP_PRIVATE,
			       .offset = seg->offset >= lead ? seg->offset - lead : 0,
			       .path = r->path};
}

/* The record's first code mapping; 0 when it has no code. */
static int first_code(const ember__dlclosed_rec *r, ember__procmap *pm)
{
	for (uint32_t i = 0; i < r->nsegs; i++)
		if (r->segs[i].flags & PF_X) {
			seg_map(r, &r->segs[i], pm);
			return 1;
		}
	return 0;
}

/* The table's module for r's first code mapping (same file, same place),
 * kept only (`kept`) or any; NULL if none. */
static sym_module *known(const ember__symbolizer *s, const ember__dlclosed_rec *r, int kept)
{
	ember__procmap pm;
	if (!first_code(r, &pm))
		return NULL;
	for (size_t i = 0; i < s->nmods; i++) {
		sym_module *m = s->mods[i];
		if (m->info.start == pm.start && strcmp(m->info.path, r->path) == 0 && (!kept || m->keep))
			return m;
	}
	return NULL;
}

int ember__symbolizer_closed_take(ember__symbolizer *s)
{
	if (!(s->flags & EMBER__SYM_DLCLOSED) || s->remote)
		return 0;
	if (!s->closed) {
		if (!ember__dlclosed_pending())
			return 0;
		s->closed = malloc(EMBER_DLCLOSED_SLOTS * sizeof(*s->closed));
		s->closed_use = calloc(EMBER_DLCLOSED_SLOTS, 1);
		if (!s->closed || !s->closed_use) {
			free(s->closed);
			free(s->closed_use);
			s->closed = NULL;
			s->closed_use = NULL;
			return ember__error_oom("dlclose journal records");
		}
	}
	size_t n = ember__dlclosed_take(s->closed + s->nclosed, EMBER_DLCLOSED_SLOTS - s->nclosed);
	memset(s->closed_use + s->nclosed, 0, n);
	s->closed_stats.taken += n;
	s->nclosed += n;
	int unknown = 0;
	for (size_t i = 0; i < s->nclosed; i++) {
		ember__procmap pm;
		unknown += first_code(&s->closed[i], &pm) && !known(s, &s->closed[i], 0);
	}
	return unknown;
}

static int ranges_overlap(uint64_t lo, uint64_t hi, uint64_t lo2, uint64_t hi2)
{
	return lo < hi2 && lo2 < hi;
}

void ember__symbolizer_closed_report(ember__symbolizer *s, const ember__procmap *images,
				     size_t nimages)
{
	for (size_t k = s->nclosed; k-- > 0;) {
		const ember__dlclosed_rec *r = &s->closed[k];
		ember__procmap pm;
		s->closed_use[k] = 0;
		if (!first_code(r, &pm) || known(s, r, 1))
			continue; /* no code to name, or kept already (keep_gone) */
		uint64_t lo, hi;
		rec_range(r, &lo, &hi);
		int over = 0, mapped = 0;
		for (size_t i = 0; i < nimages && !over; i++) {
			over = ranges_overlap(lo, hi, images[i].start, images[i].end);
			mapped = over && images[i].start == lo;
		}
		for (size_t j = k + 1; j < s->nclosed && !over; j++) {
			uint64_t lo2, hi2;
			if (!s->closed_use[j])
				continue;
			rec_range(&s->closed[j], &lo2, &hi2);
			over = ranges_overlap(lo, hi, lo2, hi2);
		}
		if (over) {
			/* still mapped (a dlclose that did not unload), or its
			 * addresses are a newer library's now */
			if (!mapped && !known(s, r, 0))
				s->closed_stats.overlapped++;
			continue;
		}
		/* it is newer than the gone modules it overlaps: they go */
		for (size_t i = 0; i < s->nmods; i++) {
			sym_module *m = s->mods[i];
			uint64_t mlo = m->dm ? m->dm_low : m->info.start;
			uint64_t mhi = m->dm ? m->dm_high : m->info.limit;
			if (m->keep && ranges_overlap(lo, hi, mlo, mhi))
				m->keep = 0;
		}
		/* (no Dwfl: an addresses-only symbolizer, symbolizer.c) */
		if (s->dwfl && !dwfl_report_module(s->dwfl, r->path, lo, hi))
			continue; /* as a mapped image libdwfl refuses: no names */
		s->closed_use[k] = 1;
		s->closed_stats.added++;
	}
}

size_t ember__symbolizer_closed_count(const ember__symbolizer *s)
{
	size_t n = 0;
	for (size_t k = 0; k < s->nclosed; k++) {
		if (!s->closed_use[k])
			continue;
		for (uint32_t i = 0; i < s->closed[k].nsegs; i++)
			n += (s->closed[k].segs[i].flags & PF_X) != 0;
	}
	return n;
}

const ember__dlclosed_rec *ember__symbolizer_closed_map(const ember__symbolizer *s, size_t i,
							ember__procmap *pm)
{
	for (size_t k = 0; k < s->nclosed; k++) {
		if (!s->closed_use[k])
			continue;
		const ember__dlclosed_rec *r = &s->closed[k];
		for (uint32_t j = 0; j < r->nsegs; j++) {
			if (!(r->segs[j].flags & PF_X))
				continue;
			if (i-- == 0) {
				seg_map(r, &r->segs[j], pm);
				return r;
			}
		}
	}
	*pm = (ember__procmap){.path = ""};
	return NULL;
}

void ember__symbolizer_closed_check(ember__symbolizer *s, const ember__dlclosed_rec *r,
				    sym_module *m)
{
	if (!r || !r->build_id_len)
		return;
	/* The build id of the code that ran, whatever the file is now: the
	 * profile's mapping carries it (`emberprof symbolize` and debuginfod
	 * find the right file by it); module_load sets the same from a file
	 * that matches. */
	char *hex = ember__arena_alloc(&m->arena, (size_t)r->build_id_len * 2 + 1);
	if (hex) {
		ember__build_id_hex(r->build_id, r->build_id_len, hex);
		m->info.build_id = hex;
	}
	if (!m->dm)
		return;
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(m->dm, &bias);
	if (!elf)
		return; /* module_load counts it */
	const void *bits = NULL;
	int n = dwelf_elf_gnu_build_id(elf, &bits);
	if (n == (int)r->build_id_len && bits && memcmp(bits, r->build_id, (size_t)n) == 0)
		return;
	/* Another file at that path now: its names would be wrong. The
	 * module stays, unnamed; it is never attached again (elf_failed). */
	s->unreadable++;
	snprintf(s->unreadable_last, sizeof(s->unreadable_last),
		 "%.400s: not the library that was dlclose'd (its build id differs: replaced since)",
		 r->path);
	m->dm = NULL;
	m->dm_low = m->dm_high = 0;
	m->elf_failed = 1;
}

void ember__symbolizer_dlclosed_use(const ember__symbolizer *s, ember__dlclosed_use *out)
{
	*out = s ? s->closed_stats : (ember__dlclosed_use){0};
}
