/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cfi.c - parses .eh_frame / .debug_frame and compiles their CFA programs
 * into sorted unwind rows (cfi.h).
 *
 * Formats (DWARF 5 section 6.4, and the LSB's description of .eh_frame and
 * .eh_frame_hdr): a section is a sequence of entries, each a length
 * (32-bit, or 0xffffffff then 64-bit), an id telling a CIE from an FDE,
 * and a body. A CIE holds the alignment factors, the return-address column,
 * the augmentation (for .eh_frame: 'z' data length, 'R' FDE pointer
 * encoding, 'P' personality, 'L' LSDA encoding, 'S' signal frame) and the
 * initial instructions every FDE starts from. An FDE holds its address
 * range and the instructions that change the rules as the address
 * advances. We run those instructions and keep, per row, only the CFA
 * rule, the return-address rule, the frame-pointer rule and the rule of
 * the aux register (arch.h: rbx, which ld.so's trampolines compute their
 * CFA from).
 *
 * Every read goes through a cursor bounded by the entry it belongs to; a
 * failed read marks the cursor bad and the FDE is dropped and counted.
 *
 * This file finds the entries, parses CIEs and FDEs and finishes the
 * table; running their instructions into rows is cfi_program.c's job
 * (the builder's state they share: cfi_internal.h). Agent side only:
 * allocates, not async-signal-safe.
 */
#include "cfi/cfi.h"
#include "cfi/cfi_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cfi/cfi_pack.h"
#include "cfi/cfi_read.h"
#include "emberprof.h"
#include "unwind/arch.h"
#include "util/error.h"
#include "util/sort.h"

#define GAP_ABSORB 16 /* bytes; see ember__cfi_finish */

/* ---- the builder ---- */

int ember__cfi_builder_new(ember__cfi_builder **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : ember__error_oom("CFI builder");
}

void ember__cfi_builder_free(ember__cfi_builder *b)
{
	if (!b)
		return;
	free(b->rows);
	free(b->runs);
	free(b);
}

const ember__cfi_stats *ember__cfi_builder_stats(const ember__cfi_builder *b)
{
	return &b->stats;
}

void ember__cfi_table_free(ember__cfi_table *t)
{
	if (!t)
		return;
	if (t->map) {
		munmap(t->map, t->map_len);
		free(t);
		return;
	}
	free(t->rows);
	free(t->index);
	free(t->block);
	free(t);
}

/* The lookup index over finished rows (see ember__unwind_module). */
static int build_index(ember__cfi_table *t)
{
	if (t->nrows == 0)
		return 0;
	uint32_t first = t->rows[0].pc, last = t->rows[t->nrows - 1].pc;
	/* No more buckets than rows: rows spread thin over a large span
	 * (garbage CFI) must not buy a large index. */
	uint32_t shift = EMBER_CFI_INDEX_SHIFT;
	while (shift < 31 && ((last - first) >> shift) + 1 > t->nrows)
		shift++;
	uint32_t n = ((last - first) >> shift) + 1;
	t->index = malloc((size_t)n * sizeof(*t->index));
	if (!t->index)
		return EMBER_ERR_NOMEM;
	t->index_shift = shift;
	uint32_t r = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t start = first + (i << shift);
		while (r + 1 < t->nrows && t->rows[r + 1].pc <= start)
			r++;
		t->index[i] = r;
	}
	t->nindex = n;
	return 0;
}

/* ---- entries ---- */

typedef struct entry {
	size_t start;   /* offset of the length field */
	size_t id_pos;  /* offset of the CIE id / CIE pointer */
	size_t body;    /* offset after the id */
	size_t next;    /* offset of the next entry */
	uint64_t id;
	int is64;
	int terminator;
} entry;

/* Reads an entry header at pos. 0, or -1 if it does not fit the section. */
static int read_entry(const uint8_t *d, size_t len, size_t pos, int kind, entry *e)
{
	rd r = {d, pos, len, 0};
	memset(e, 0, sizeof(*e));
	e->start = pos;
	uint64_t l = rd_uint(&r, 4);
	if (r.bad)
		return -1;
	if (l == 0) {
		e->terminator = 1;
		e->next = r.pos;
		return 0;
	}
	if (l == 0xffffffffu) {
		l = rd_uint(&r, 8);
		e->is64 = 1;
	} else if (l >= 0xfffffff0u) {
		return -1;
	}
	if (r.bad || l > len - r.pos)
		return -1;
	e->next = r.pos + (size_t)l;
	e->id_pos = r.pos;
	r.end = e->next;
	e->id = rd_uint(&r, kind == EMBER_CFI_DEBUG_FRAME && e->is64 ? 8 : 4);
	if (r.bad)
		return -1;
	e->body = r.pos;
	return 0;
}

static int is_cie(const entry *e, int kind)
{
	if (kind == EMBER_CFI_EH_FRAME)
		return e->id == 0;
	return e->is64 ? e->id == UINT64_MAX : e->id == 0xffffffffu;
}

/* Parses the CIE at section offset off into *c. 0 or -1. */
static int parse_cie(ember__cfi_builder *b, const uint8_t *d, size_t len, size_t off, int kind,
		     uint64_t vaddr, cie *c)
{
	entry e;
	if (read_entry(d, len, off, kind, &e) || e.terminator || !is_cie(&e, kind))
		return -1;
	memset(c, 0, sizeof(*c));
	c->off = off;
	c->sec = d;
	c->kind = kind;
	c->addr_size = EMBER_ARCH_ADDR_SIZE;
	rd r = {d, e.body, e.next, 0};
	uint8_t version = rd_u8(&r);
	if (kind == EMBER_CFI_EH_FRAME ? (version != 1 && version != 3)
				       : (version != 1 && version != 3 && version != 4))
		return -1;
	size_t aug = r.pos;
	while (rd_need(&r, 1) && d[r.pos])
		r.pos++;
	rd_u8(&r); /* the NUL */
	if (r.bad)
		return -1;
	const char *augs = (const char *)d + aug;
	size_t auglen = r.pos - aug - 1;
	if (version == 4) {
		c->addr_size = rd_u8(&r);
		if (rd_u8(&r) != 0 || (c->addr_size != 4 && c->addr_size != 8))
			return -1; /* segment selectors: not on our platforms */
	}
	c->caf = rd_uleb(&r);
	c->daf = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_u8(&r) : rd_uleb(&r);
	c->fde_enc = PE_ABSPTR; /* unless 'R' says otherwise */
	if (r.bad || c->caf == 0)
		return -1;
	if (auglen > 0 && augs[0] == 'z') {
		c->has_z = 1;
		uint64_t n = rd_uleb(&r);
		if (r.bad || n > r.end - r.pos)
			return -1;
		rd a = {d, r.pos, r.pos + (size_t)n, 0};
		ptr_ctx pctx = {vaddr, 0, 0};
		for (size_t i = 1; i < auglen; i++) {
			switch (augs[i]) {
			case 'R': c->fde_enc = rd_u8(&a); break;
			case 'L': rd_u8(&a); break;
			case 'P': {
				uint8_t penc = rd_u8(&a);
				rd_encoded(&a, penc, &pctx, 1);
				break;
			}
			case 'S': c->signal = 1; break;
			case 'B': /* aarch64 pointer authentication key B */
			case 'G': /* aarch64 memory tagging */
				break;
			default:
				return -1;
			}
			if (a.bad)
				return -1;
		}
		r.pos += (size_t)n;
	} else if (auglen > 0) {
		return -1; /* "eh" and other pre-'z' augmentations */
	}
	/* The initial instructions. */
	memset(&c->init, 0, sizeof(c->init));
	c->init.fp.how = RULE_SAME;
	c->init.aux.how = RULE_SAME; /* callee-saved: the ABI's default */
	/* Without a link register the CIE always places the return address;
	 * with one, an unmentioned return-address column keeps its value: it
	 * is the link register until the function saves it. */
	c->init.ra.how = EMBER_ARCH_LINK_REG ? RULE_SAME : RULE_NONE;
	rd ins = {d, r.pos, e.next, 0};
	ptr_ctx none = {vaddr, 0, 0};
	if (ember__cfi_run_program(b, &ins, c, &none, &c->init, NULL, 0, 0) != PROG_OK)
		return -1;
	return 0;
}

/* The CIE at offset off, from the cache or parsed now; NULL if bad. */
static const cie *get_cie(ember__cfi_builder *b, const uint8_t *d, size_t len, size_t off,
			  int kind, uint64_t vaddr)
{
	for (unsigned i = 0; i < b->ncache; i++)
		if (b->cache[i].sec == d && b->cache[i].off == off && b->cache[i].kind == kind)
			return &b->cache[i];
	cie tmp;
	if (parse_cie(b, d, len, off, kind, vaddr, &tmp) != 0) {
		b->stats.bad_cies++;
		return NULL;
	}
	b->stats.cies++;
	unsigned slot = b->ncache < CIE_CACHE ? b->ncache++ : (b->next_slot++ % CIE_CACHE);
	b->cache[slot] = tmp;
	return &b->cache[slot];
}

static int push_run(ember__cfi_builder *b, const run *rn)
{
	if (b->nruns == b->capruns) {
		size_t ncap = b->capruns ? b->capruns * 2 : 256;
		run *n = realloc(b->runs, ncap * sizeof(*n));
		if (!n)
			return EMBER_ERR_NOMEM;
		b->runs = n;
		b->capruns = ncap;
	}
	b->runs[b->nruns] = *rn;
	b->runs[b->nruns].seq = (uint32_t)b->nruns;
	b->nruns++;
	return 0;
}

/* Turns the FDE whose entry is e into rows. 0 or EMBER_ERR_NOMEM. */
static int add_fde(ember__cfi_builder *b, const uint8_t *d, size_t len, uint64_t vaddr, int kind,
		   int priority, const entry *e)
{
	size_t cie_off;
	if (kind == EMBER_CFI_EH_FRAME) {
		if (e->id > e->id_pos)
			goto bad;
		cie_off = e->id_pos - (size_t)e->id;
	} else {
		if (e->id >= len)
			goto bad;
		cie_off = (size_t)e->id;
	}
	/* (the same section buffer keys the cache, so the FDE reuses its CIE) */
	const cie *c = get_cie(b, d, len, cie_off, kind, vaddr);
	if (!c)
		goto bad;
	rd r = {d, e->body, e->next, 0};
	ptr_ctx pctx = {vaddr, 0, 0};
	uint64_t begin, range;
	if (kind == EMBER_CFI_DEBUG_FRAME) {
		begin = rd_uint(&r, c->addr_size);
		range = rd_uint(&r, c->addr_size);
	} else {
		begin = rd_encoded(&r, c->fde_enc, &pctx, 0);
		range = rd_encoded_value(&r, c->fde_enc);
	}
	if (c->has_z)
		rd_skip(&r, rd_uleb(&r));
	if (r.bad)
		goto bad;
	if (begin == 0 || range == 0 || (c->addr_size == 4 && begin == 0xffffffffu) ||
	    begin == UINT64_MAX)
		return 0; /* discarded by the linker (tombstone), or empty: nothing to add */
	if (begin > UINT32_MAX || range > (uint64_t)UINT32_MAX + 1 - begin)
		goto bad; /* rows hold 32-bit offsets */
	run rn = {.start = begin, .end = begin + range, .first = b->nrows, .priority = priority};
	cfstate st = c->init;
	int rc = ember__cfi_run_program(b, &r, c, &pctx, &st, &c->init, begin, begin + range);
	if (rc == PROG_NOMEM)
		return EMBER_ERR_NOMEM;
	if (rc != PROG_OK) {
		b->nrows = rn.first;
		goto bad;
	}
	rn.n = b->nrows - rn.first;
	for (size_t i = rn.first; i < b->nrows; i++) {
		unsigned k = b->rows[i].kind & EMBER_CFI_KIND_MASK;
		b->stats.plt_rows += k == EMBER_CFI_PLT;
		b->stats.unknown_rows += k == EMBER_CFI_UNKNOWN;
	}
	b->stats.raw_rows += (uint32_t)rn.n;
	b->stats.fdes++;
	b->stats.signal_fdes += c->signal;
	if (push_run(b, &rn)) {
		b->nrows = rn.first;
		return EMBER_ERR_NOMEM;
	}
	return 0;
bad:
	b->stats.bad_fdes++;
	return 0;
}

int ember__cfi_add_section(ember__cfi_builder *b, const uint8_t *data, size_t len, uint64_t vaddr,
			   int kind, int priority)
{
	if (kind != EMBER_CFI_EH_FRAME && kind != EMBER_CFI_DEBUG_FRAME)
		return ember__error(EMBER_ERR_INVALID, "unknown CFI section kind %d", kind);
	b->ncache = 0; /* CIEs are cached per section buffer */
	size_t pos = 0;
	while (pos < len) {
		entry e;
		if (read_entry(data, len, pos, kind, &e) != 0) {
			b->stats.bad_fdes++; /* cannot find the next entry: the rest is lost */
			break;
		}
		if (e.terminator) {
			if (kind == EMBER_CFI_EH_FRAME)
				break;
			b->stats.bad_fdes++;
			break;
		}
		if (!is_cie(&e, kind)) {
			int rc = add_fde(b, data, len, vaddr, kind, priority, &e);
			if (rc)
				return ember__error_oom("CFI rows");
		}
		pos = e.next;
	}
	return 0;
}

int ember__cfi_add_fill(ember__cfi_builder *b, uint64_t start, uint64_t end,
			const ember__cfi_row *rows, size_t n)
{
	if (n == 0 || start == 0 || start >= end || end > (uint64_t)UINT32_MAX + 1 ||
	    rows[0].pc != start)
		return 0;
	for (size_t i = 1; i < n; i++)
		if (rows[i].pc <= rows[i - 1].pc || rows[i].pc >= end)
			return 0;
	run rn = {.start = start, .end = end, .first = b->nrows, .priority = INT_MIN, .fill = 1};
	for (size_t i = 0; i < n; i++)
		if (ember__cfi_push_row(b, &rows[i])) {
			b->nrows = rn.first;
			return ember__error_oom("CFI rows");
		}
	rn.n = n;
	b->stats.raw_rows += (uint32_t)n;
	if (push_run(b, &rn)) {
		b->nrows = rn.first;
		return ember__error_oom("CFI rows");
	}
	return 0;
}

/* The fixed fields of an .eh_frame_hdr. */
typedef struct hdr_fields {
	uint64_t eh_vaddr;
	uint64_t fde_count;
	uint8_t table_enc;
	int has_table;
	size_t table_pos;
} hdr_fields;

static int parse_hdr(const uint8_t *hdr, size_t hdr_len, uint64_t hdr_vaddr, hdr_fields *h)
{
	rd r = {hdr, 0, hdr_len, 0};
	ptr_ctx c = {hdr_vaddr, hdr_vaddr, 1};
	uint8_t version = rd_u8(&r);
	uint8_t ptr_enc = rd_u8(&r);
	uint8_t count_enc = rd_u8(&r);
	h->table_enc = rd_u8(&r);
	if (r.bad || version != 1)
		return ember__error(EMBER_ERR_FORMAT, ".eh_frame_hdr: version %u, expected 1", version);
	h->eh_vaddr = rd_encoded(&r, ptr_enc, &c, 0);
	if (r.bad)
		return ember__error(EMBER_ERR_FORMAT, ".eh_frame_hdr: unsupported eh_frame_ptr encoding 0x%02x",
				    ptr_enc);
	h->has_table = count_enc != PE_OMIT && h->table_enc != PE_OMIT;
	if (h->has_table) {
		h->fde_count = rd_encoded(&r, count_enc, &c, 0);
		if (r.bad)
			return ember__error(EMBER_ERR_FORMAT, ".eh_frame_hdr: unsupported count encoding 0x%02x",
					    count_enc);
	}
	h->table_pos = r.pos;
	return 0;
}

int ember__cfi_eh_frame_hdr_target(const uint8_t *hdr, size_t hdr_len, uint64_t hdr_vaddr,
				   uint64_t *eh_vaddr)
{
	hdr_fields h;
	int rc = parse_hdr(hdr, hdr_len, hdr_vaddr, &h);
	if (rc == 0)
		*eh_vaddr = h.eh_vaddr;
	return rc;
}

int ember__cfi_add_eh_frame_hdr(ember__cfi_builder *b, const uint8_t *hdr, size_t hdr_len,
				uint64_t hdr_vaddr, const uint8_t *eh, size_t eh_len,
				uint64_t eh_vaddr, int priority)
{
	hdr_fields h;
	int rc = parse_hdr(hdr, hdr_len, hdr_vaddr, &h);
	if (rc)
		return rc;
	if (h.eh_vaddr != eh_vaddr)
		return ember__error(EMBER_ERR_FORMAT,
				    ".eh_frame_hdr points to 0x%llx, not to .eh_frame at 0x%llx",
				    (unsigned long long)h.eh_vaddr, (unsigned long long)eh_vaddr);
	if (!h.has_table)
		return ember__cfi_add_section(b, eh, eh_len, eh_vaddr, EMBER_CFI_EH_FRAME, priority);
	b->ncache = 0;
	rd r = {hdr, h.table_pos, hdr_len, 0};
	ptr_ctx c = {hdr_vaddr, hdr_vaddr, 1};
	for (uint64_t i = 0; i < h.fde_count; i++) {
		rd_encoded(&r, h.table_enc, &c, 0); /* initial location: the FDE has its own */
		uint64_t fde = rd_encoded(&r, h.table_enc, &c, 0);
		if (r.bad) {
			b->stats.bad_fdes++; /* truncated or undecodable table: stop */
			break;
		}
		entry e;
		if (fde < eh_vaddr || fde - eh_vaddr >= eh_len ||
		    read_entry(eh, eh_len, (size_t)(fde - eh_vaddr), EMBER_CFI_EH_FRAME, &e) != 0 ||
		    e.terminator || is_cie(&e, EMBER_CFI_EH_FRAME)) {
			b->stats.bad_fdes++;
			continue;
		}
		if (add_fde(b, eh, eh_len, eh_vaddr, EMBER_CFI_EH_FRAME, priority, &e))
			return ember__error_oom("CFI rows");
	}
	return 0;
}

/* ---- finishing ---- */

static int cmp_runs(const void *pa, const void *pb)
{
	const run *a = pa, *b = pb;
	if (a->priority != b->priority)
		return a->priority > b->priority ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Whether [start, end) overlaps a run of acc[0..n) (sorted, disjoint). */
static int overlaps(const run *acc, size_t n, uint64_t start, uint64_t end)
{
	size_t lo = 0, hi = n; /* first run with end > start */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (acc[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && acc[lo].start < end;
}

static int same_rule(const ember__cfi_row *a, const ember__cfi_row *b)
{
	return a->kind == b->kind && a->cfa == b->cfa && a->fp == b->fp;
}

static int finish(ember__cfi_builder *b, ember__cfi_table **out, int pack);

int ember__cfi_finish(ember__cfi_builder *b, ember__cfi_table **out)
{
	return finish(b, out, 1);
}

int ember__cfi_finish_rows(ember__cfi_builder *b, ember__cfi_table **out)
{
	return finish(b, out, 0);
}

static int finish(ember__cfi_builder *b, ember__cfi_table **out, int pack)
{
	*out = NULL;
	int rc = 0;
	run *acc = NULL, *merged = NULL;
	ember__cfi_row *rows = NULL;
	ember__cfi_table *t = calloc(1, sizeof(*t));
	if (!t)
		goto oom;
	if (b->nruns) {
		acc = malloc(b->nruns * sizeof(*acc));
		merged = malloc(b->nruns * sizeof(*merged));
		if (!acc || !merged)
			goto oom;
	}
	if (b->nruns)
		ember__sort(b->runs, b->nruns, sizeof(*b->runs), cmp_runs); /* util/sort.h */
	/* Priority by priority: keep a run unless it overlaps one kept from a
	 * higher priority or the previous one kept at its own. */
	size_t nacc = 0;
	for (size_t i = 0; i < b->nruns;) {
		size_t j = i, nnew = 0, first_new = nacc;
		uint64_t last_end = 0;
		while (j < b->nruns && b->runs[j].priority == b->runs[i].priority) {
			const run *rn = &b->runs[j++];
			if ((nnew && rn->start < last_end) || overlaps(acc, first_new, rn->start, rn->end)) {
				if (rn->fill)
					b->stats.fill_dropped++;
				else
					b->stats.overlaps++;
				continue;
			}
			acc[nacc++] = *rn; /* appended after the older ones for now */
			if (rn->fill)
				b->stats.fill_rows += (uint32_t)rn->n;
			nnew++;
			last_end = rn->end;
		}
		/* merge acc[0..first_new) and acc[first_new..nacc), both by start */
		size_t x = 0, y = first_new, m = 0;
		while (x < first_new || y < nacc)
			merged[m++] = (y == nacc || (x < first_new && acc[x].start < acc[y].start)) ? acc[x++]
												       : acc[y++];
		memcpy(acc, merged, m * sizeof(*acc));
		i = j;
	}
	size_t cap = b->nrows + nacc + 1, n = 0;
	rows = malloc(cap * sizeof(*rows));
	if (!rows)
		goto oom;
	uint64_t last_end = 0;
	for (size_t i = 0; i < nacc; i++) {
		const run *rn = &acc[i];
		/* A gap shorter than GAP_ABSORB is alignment padding: no code
		 * runs there, so the previous row may cover it (which lets it
		 * merge with the next function's first row). */
		if (i > 0 && rn->start - last_end >= GAP_ABSORB) {
			ember__cfi_row gap = {.pc = (uint32_t)last_end, .kind = EMBER_CFI_NONE};
			rows[n++] = gap;
		}
		for (size_t k = 0; k < rn->n; k++)
			rows[n++] = b->rows[rn->first + k];
		last_end = rn->end;
	}
	if (nacc && last_end <= UINT32_MAX) {
		ember__cfi_row gap = {.pc = (uint32_t)last_end, .kind = EMBER_CFI_NONE};
		rows[n++] = gap;
	}
	/* Merge rows that say the same as the one before them. */
	size_t w = 0;
	for (size_t i = 0; i < n; i++)
		if (w == 0 || !same_rule(&rows[w - 1], &rows[i]))
			rows[w++] = rows[i];
	if (w == 0) {
		free(rows);
		rows = NULL;
	} else {
		ember__cfi_row *shrunk = realloc(rows, w * sizeof(*rows));
		if (shrunk)
			rows = shrunk;
	}
	t->rows = rows;
	t->nrows = (uint32_t)w;
	rows = NULL;
	if (build_index(t))
		goto oom;
	t->bytes = sizeof(*t) + w * sizeof(*t->rows) + t->nindex * sizeof(*t->index);
	t->stats = b->stats;
	if (pack && ember__cfi_pack(t))
		goto oom;
	*out = t;
	goto done;
oom:
	rc = ember__error_oom("CFI table");
	free(rows);
	ember__cfi_table_free(t);
done:
	free(acc);
	free(merged);
	ember__cfi_builder_free(b);
	return rc;
}
