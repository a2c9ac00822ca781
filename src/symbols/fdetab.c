/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fdetab.c - the FDE ranges of a module's .eh_frame (fdetab.h).
 *
 * .eh_frame is a sequence of records, each a 4-byte length (0xffffffff:
 * an 8-byte length follows) and a 4-byte id: 0 for a CIE, else the
 * distance back from the id field to the FDE's CIE. A zero length ends
 * the section. An FDE's first fields are its initial location and its
 * address range, encoded as the CIE's augmentation says ('R' in a "z..."
 * augmentation string: a DW_EH_PE_* byte; absptr without it). This is
 * the part of the format the unwinder's reader (src/cfi/) reads too; the
 * folder order puts symbols below cfi, so the few lines needed here are
 * their own.
 */
#include "symbols/fdetab.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "emberprof.h"
#include "util/error.h"
#include "util/sort.h"

/* DW_EH_PE_* pointer encodings */
#define PE_OMIT 0xff
#define PE_FORMAT 0x0f
#define PE_APPL 0x70
#define PE_ABSPTR 0x00
#define PE_ULEB128 0x01
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SLEB128 0x09
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_PCREL 0x10
#define PE_DATAREL 0x30

#define LOOKBACK 8 /* earlier FDEs checked for one enclosing a later one */

typedef struct cursor {
	const uint8_t *p, *end;
	int bad;
} cursor;

static uint64_t get_n(cursor *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return 0;
	}
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) /* little-endian: the ELF files we read */
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

static uint64_t get_uleb(cursor *c)
{
	uint64_t v = 0;
	for (unsigned shift = 0; !c->bad; shift += 7) {
		if (c->p >= c->end || shift > 63) {
			c->bad = 1;
			break;
		}
		uint8_t b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	return 0;
}

static int64_t get_sleb(cursor *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;
	do {
		if (c->p >= c->end || shift > 63) {
			c->bad = 1;
			return 0;
		}
		b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

static int64_t sext(uint64_t v, unsigned bits)
{
	uint64_t m = 1ull << (bits - 1);
	return (int64_t)((v ^ m) - m);
}

/*
 * Reads a pointer encoded as `enc`; `here` is the vaddr of c->p (for
 * pcrel), `data` that of .eh_frame_hdr (datarel). `range`: an address
 * range, which takes the format only. 0 on success.
 */
static int get_ptr(cursor *c, uint8_t enc, uint64_t here, uint64_t data, int range, uint64_t *out)
{
	uint64_t v;
	switch (enc & PE_FORMAT) {
	case PE_ABSPTR: v = get_n(c, 8); break;
	case PE_ULEB128: v = get_uleb(c); break;
	case PE_UDATA2: v = get_n(c, 2); break;
	case PE_UDATA4: v = get_n(c, 4); break;
	case PE_UDATA8: v = get_n(c, 8); break;
	case PE_SLEB128: v = (uint64_t)get_sleb(c); break;
	case PE_SDATA2: v = (uint64_t)sext(get_n(c, 2), 16); break;
	case PE_SDATA4: v = (uint64_t)sext(get_n(c, 4), 32); break;
	case PE_SDATA8: v = get_n(c, 8); break;
	default: return -1;
	}
	if (c->bad)
		return -1;
	if (!range) {
		switch (enc & PE_APPL) {
		case 0: break;
		case PE_PCREL: v += here; break;
		case PE_DATAREL: v += data; break;
		default: return -1; /* textrel, funcrel, aligned: not in .eh_frame FDEs */
		}
	}
	*out = v;
	return 0;
}

/* The FDE pointer encoding of the CIE at c (just past its id), or -1. */
static int cie_encoding(cursor c, uint64_t here_of_p0, const uint8_t *p0)
{
	int version = (int)get_n(&c, 1);
	const char *aug = (const char *)c.p;
	size_t alen = strnlen(aug, (size_t)(c.end - c.p));
	if (c.bad || alen == (size_t)(c.end - c.p))
		return -1;
	c.p += alen + 1;
	if (strstr(aug, "eh"))
		return -1; /* gcc 2's extra pointer: no longer made */
	if (version >= 4) {
		if (get_n(&c, 1) != 8)
			return -1; /* address size */
		get_n(&c, 1);      /* segment selector size */
	}
	get_uleb(&c); /* code alignment */
	get_sleb(&c); /* data alignment */
	if (version == 1)
		get_n(&c, 1);
	else
		get_uleb(&c); /* return address register */
	if (aug[0] != 'z')
		return c.bad || aug[0] ? -1 : PE_ABSPTR;
	get_uleb(&c); /* augmentation data length */
	for (const char *a = aug + 1; *a && !c.bad; a++) {
		uint64_t ignored;
		switch (*a) {
		case 'R':
			return (int)get_n(&c, 1);
		case 'L':
			get_n(&c, 1);
			break;
		case 'P': {
			uint8_t penc = (uint8_t)get_n(&c, 1);
			if (get_ptr(&c, penc & 0x7f, here_of_p0 + (uint64_t)(c.p - p0), 0, 0, &ignored))
				return -1;
			break;
		}
		case 'S':
		case 'B':
			break;
		default:
			return PE_ABSPTR; /* unknown: 'R' comes first in what GCC and LLVM write */
		}
	}
	return c.bad ? -1 : PE_ABSPTR;
}

typedef struct range {
	uint64_t lo, hi;
} range;

static int by_lo(const void *a, const void *b)
{
	const range *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/*
 * Walks .eh_frame's bytes [data, data + size), mapped at vaddr, appending
 * each FDE's [lo, hi) to *v. Stops at the terminator, the end or the first
 * malformed record. 0 or EMBER_ERR_NOMEM.
 */
static int walk(const uint8_t *data, size_t size, uint64_t vaddr, range **v, size_t *n,
		size_t *cap, const char **why)
{
	const uint8_t *p = data, *end = data + size;
	const uint8_t *cie_at = NULL;
	int cie_enc = -1;
	while ((size_t)(end - p) >= 4) {
		cursor c = {p, end, 0};
		uint64_t len = get_n(&c, 4);
		if (len == 0)
			break;
		if (len == 0xffffffffu)
			len = get_n(&c, 8);
		if (c.bad || len > (uint64_t)(end - c.p)) {
			*why = "a record of .eh_frame runs past its end";
			break;
		}
		const uint8_t *rec_end = c.p + len;
		c.end = rec_end;
		const uint8_t *id_at = c.p;
		uint64_t id = get_n(&c, 4);
		p = rec_end;
		if (c.bad || id == 0)
			continue; /* a CIE: read when an FDE needs it */
		if (id > (uint64_t)(id_at - data)) {
			*why = "an FDE of .eh_frame points before the section";
			break;
		}
		const uint8_t *cie = id_at - id;
		if (cie != cie_at) {
			cursor cc = {cie, end, 0};
			uint64_t clen = get_n(&cc, 4);
			if (clen == 0xffffffffu)
				clen = get_n(&cc, 8);
			if (cc.bad || clen > (uint64_t)(end - cc.p) || clen < 4) {
				*why = "an FDE of .eh_frame has no CIE";
				break;
			}
			cc.end = cc.p + clen;
			if (get_n(&cc, 4) != 0) {
				*why = "an FDE of .eh_frame has no CIE";
				break;
			}
			cie_at = cie;
			cie_enc = cie_encoding(cc, vaddr + (uint64_t)(cc.p - data), cc.p);
		}
		if (cie_enc < 0 || cie_enc == PE_OMIT)
			continue; /* a CIE we cannot read: skip its FDEs */
		uint64_t lo, len_pc;
		uint8_t enc = (uint8_t)cie_enc & 0x7f; /* indirect makes no sense for a PC */
		if (get_ptr(&c, enc, vaddr + (uint64_t)(c.p - data), 0, 0, &lo) ||
		    get_ptr(&c, enc, 0, 0, 1, &len_pc))
			continue;
		if (len_pc == 0 || lo + len_pc < lo)
			continue; /* empty (a discarded function's FDE) */
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 256;
			range *nv = realloc(*v, nc * sizeof(*nv));
			if (!nv)
				return ember__error_oom("FDE table");
			*v = nv;
			*cap = nc;
		}
		(*v)[(*n)++] = (range){lo, lo + len_pc};
	}
	return 0;
}

/* Finds .eh_frame: its bytes and vaddr; 0, or -1 with *why set. */
static int find_eh_frame(Elf *elf, const uint8_t **data, size_t *size, uint64_t *vaddr,
			 const char **why)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
		for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
				continue;
			const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (!name || strcmp(name, ".eh_frame") != 0)
				continue;
			Elf_Data *d = elf_getdata(scn, NULL);
			if (!d || !d->d_buf || d->d_size == 0) {
				*why = ".eh_frame cannot be read";
				return -1;
			}
			*data = d->d_buf;
			*size = d->d_size;
			*vaddr = sh.sh_addr;
			return 0;
		}
	}
	/* No section headers (or no .eh_frame among them): through the
	 * PT_GNU_EH_FRAME segment, .eh_frame_hdr, whose eh_frame_ptr gives
	 * .eh_frame's address, which lies in a PT_LOAD segment. */
	size_t nph = 0, fsize = 0;
	const uint8_t *file = (const uint8_t *)elf_rawfile(elf, &fsize);
	if (!file || elf_getphdrnum(elf, &nph) != 0) {
		*why = "no .eh_frame";
		return -1;
	}
	GElf_Phdr hdr = {0};
	int have_hdr = 0;
	for (size_t i = 0; i < nph && !have_hdr; i++)
		have_hdr = gelf_getphdr(elf, (int)i, &hdr) && hdr.p_type == PT_GNU_EH_FRAME;
	if (!have_hdr || hdr.p_offset > fsize || hdr.p_filesz > fsize - hdr.p_offset ||
	    hdr.p_filesz < 4) {
		*why = "no .eh_frame";
		return -1;
	}
	cursor c = {file + hdr.p_offset, file + hdr.p_offset + hdr.p_filesz, 0};
	uint8_t version = (uint8_t)get_n(&c, 1), penc = (uint8_t)get_n(&c, 1);
	get_n(&c, 2); /* the table's encodings */
	uint64_t eh;
	if (version != 1 ||
	    get_ptr(&c, penc & 0x7f, hdr.p_vaddr + 4, hdr.p_vaddr, 0, &eh)) {
		*why = ".eh_frame_hdr cannot be read";
		return -1;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || eh < ph.p_vaddr ||
		    eh >= ph.p_vaddr + ph.p_filesz)
			continue;
		uint64_t off = ph.p_offset + (eh - ph.p_vaddr);
		uint64_t lim = ph.p_offset + ph.p_filesz;
		if (lim > fsize || off >= lim)
			break;
		*data = file + off;
		*size = (size_t)(lim - off); /* the walk stops at the terminator */
		*vaddr = eh;
		return 0;
	}
	*why = ".eh_frame is outside the loaded segments";
	return -1;
}

int ember__fdetab_build(ember__fdetab *t, Elf *elf)
{
	*t = (ember__fdetab)EMBER_FDETAB_INIT;
	const uint8_t *data;
	size_t size;
	uint64_t vaddr;
	const char *why = NULL;
	if (!elf || find_eh_frame(elf, &data, &size, &vaddr, &why) != 0) {
		t->built = 1;
		t->why = elf ? why : "no ELF file";
		return 0;
	}
	range *v = NULL;
	size_t n = 0, cap = 0;
	int err = walk(data, size, vaddr, &v, &n, &cap, &why);
	if (err) {
		free(v);
		return err;
	}
	if (n > 1)
		ember__sort(v, n, sizeof(*v), by_lo);
	/* offsets from the lowest start; FDEs beyond 4 GB of it are dropped */
	uint64_t base = n ? v[0].lo : 0;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i].hi - base > UINT32_MAX)
			continue;
		if (k && v[k - 1].lo == v[i].lo && v[k - 1].hi == v[i].hi)
			continue;
		v[k++] = v[i];
	}
	t->start = malloc((k ? k : 1) * sizeof(*t->start));
	t->end = malloc((k ? k : 1) * sizeof(*t->end));
	if (!t->start || !t->end) {
		free(v);
		ember__fdetab_reset(t);
		return ember__error_oom("FDE table");
	}
	for (size_t i = 0; i < k; i++) {
		t->start[i] = (uint32_t)(v[i].lo - base);
		t->end[i] = (uint32_t)(v[i].hi - base);
	}
	free(v);
	t->base = base;
	t->n = k;
	t->built = 1;
	t->why = k ? NULL : why ? why : ".eh_frame has no FDE";
	return 0;
}

int ember__fdetab_find(const ember__fdetab *t, uint64_t vaddr, uint64_t *start)
{
	if (!t->n || vaddr < t->base || vaddr - t->base > UINT32_MAX)
		return 0;
	uint32_t off = (uint32_t)(vaddr - t->base);
	size_t lo = 0, hi = t->n; /* first start > off */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->start[mid] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	uint32_t gap = 0;
	for (size_t i = lo, k = 0; i > 0 && k < LOOKBACK; i--, k++) {
		if (t->end[i - 1] > off) {
			*start = t->base + t->start[i - 1];
			return 1;
		}
		if (t->end[i - 1] > gap)
			gap = t->end[i - 1];
	}
	*start = t->base + gap;
	return 2;
}

void ember__fdetab_reset(ember__fdetab *t)
{
	free(t->start);
	free(t->end);
	*t = (ember__fdetab)EMBER_FDETAB_INIT;
}

/* ---- tables kept per file ---- */

/* Built tables of the last few files, for the next symbolizer of the same
 * file (the tree engine has one per process: 200 `cc1`s would each sort
 * its ~40,000 FDEs again). A file is its device, inode, size and mtime. */
#define FILE_CACHE 8
typedef struct cached {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	uint64_t used; /* 0: empty */
	ember__fdetab tab;
} cached;
static cached file_cache[FILE_CACHE];
static uint64_t file_clock;
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;

static int copy_tab(ember__fdetab *to, const ember__fdetab *from)
{
	*to = *from;
	to->start = malloc((from->n ? from->n : 1) * sizeof(*to->start));
	to->end = malloc((from->n ? from->n : 1) * sizeof(*to->end));
	if (!to->start || !to->end) {
		ember__fdetab_reset(to);
		return -1;
	}
	memcpy(to->start, from->start, from->n * sizeof(*to->start));
	memcpy(to->end, from->end, from->n * sizeof(*to->end));
	return 0;
}

static int same_file(const cached *c, const struct stat *st)
{
	return c->used && c->dev == st->st_dev && c->ino == st->st_ino && c->size == st->st_size &&
	       c->mtime.tv_sec == st->st_mtim.tv_sec && c->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

int ember__fdetab_build_file(ember__fdetab *t, Elf *elf, const char *path)
{
	struct stat st;
	if (!path || path[0] != '/' || stat(path, &st) != 0)
		return ember__fdetab_build(t, elf);
	pthread_mutex_lock(&file_lock);
	for (int i = 0; i < FILE_CACHE; i++) {
		if (!same_file(&file_cache[i], &st))
			continue;
		int rc = copy_tab(t, &file_cache[i].tab);
		file_cache[i].used = ++file_clock;
		pthread_mutex_unlock(&file_lock);
		return rc == 0 ? 0 : ember__error_oom("FDE table");
	}
	pthread_mutex_unlock(&file_lock);
	int rc = ember__fdetab_build(t, elf);
	if (rc != 0 || t->n < 1024) /* small tables are cheap to build again */
		return rc;
	cached c = {st.st_dev, st.st_ino, st.st_size, st.st_mtim, 0, EMBER_FDETAB_INIT};
	if (copy_tab(&c.tab, t) != 0)
		return 0; /* not kept: the next one builds its own */
	pthread_mutex_lock(&file_lock);
	int lru = 0;
	for (int i = 1; i < FILE_CACHE; i++)
		if (file_cache[i].used < file_cache[lru].used)
			lru = i;
	ember__fdetab_reset(&file_cache[lru].tab);
	c.used = ++file_clock;
	file_cache[lru] = c;
	pthread_mutex_unlock(&file_lock);
	return 0;
}
