/* SPDX-License-Identifier: Apache-2.0 */
/*
 * table_cache.c - the persistent unwind-table cache (table_cache.h).
 */
#include "cfi/table_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "cfi/cfi_pack.h"
#include "unwind/arch.h"
#include "util/envsnap.h"
#include "util/error.h"
#include "util/log.h"
#include "util/ownfd.h"

struct ember__table_cache {
	const ember__logger *log;
	char *dir;
	int dir_ok;    /* the directory exists (or was created) */
	int map_files; /* 1: the directory is on a local file system: map files, else copy */
	int store_failures_logged;
	ember__build_id builder;
	unsigned tmp_seq;
	ember__build_id claimed; /* our claim not yet released (len 0: none) */
	ember__table_cache_stats st;
};

static uint64_t fnv1a(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t ember__table_cache_header_check(const ember__table_cache_header *h)
{
	return fnv1a(h, offsetof(ember__table_cache_header, check));
}

void ember__table_cache_header_init(ember__table_cache_header *h, const ember__build_id *id,
				    const ember__build_id *builder, const ember__cfi_table *t)
{
	uint32_t nrows = t->nrows, nindex = t->index ? t->nindex : 0;
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, EMBER_TABLE_CACHE_MAGIC, sizeof(h->magic));
	h->version = EMBER_TABLE_CACHE_VERSION;
	h->arch = EMBER_ARCH_ELF_MACHINE;
	h->header_size = sizeof(*h);
	h->row_size = sizeof(ember__cfi_row);
	h->module = *id;
	h->builder = *builder;
	h->rows_off = (sizeof(*h) + 7) & ~(uint64_t)7;
	if (t->packed.nrows) {
		const ember__cfi_packed *p = &t->packed;
		h->packed = 1;
		h->nrows = p->nrows;
		h->nrules = p->nrules;
		h->nsignal = p->nsignal;
		h->npages = p->npages;
		h->page0 = p->page0;
		h->index_off = h->rows_off +
			       ember__cfi_packed_layout(p->nrows, p->nrules, p->npages, NULL, NULL);
		h->file_size = h->index_off;
		return;
	}
	h->nrows = nrows;
	h->nindex = nindex;
	h->index_shift = nindex ? t->index_shift : 0;
	h->index_off = h->rows_off + (uint64_t)nrows * sizeof(ember__cfi_row);
	h->file_size = h->index_off + (uint64_t)nindex * sizeof(uint32_t);
}

/* The packed arrays of a file image whose header says packed (sizes
 * checked by the caller). */
static void image_packed(const ember__table_cache_header *h, const uint8_t *img,
			 ember__cfi_packed *p)
{
	memset(p, 0, sizeof(*p));
	ember__cfi_packed_layout(h->nrows, h->nrules, h->npages, img + h->rows_off, p);
	p->nsignal = h->nsignal;
	p->page0 = h->page0;
}

/* The packed form's part of ember__table_cache_validate. */
static int validate_packed(const ember__table_cache_header *h, const uint8_t *data, size_t size)
{
	if (h->nindex || h->index_shift || h->nrows == 0 || h->npages == 0 ||
	    h->nrules > EMBER_CFI_RULES_MAX || h->npages > (1u << (32 - EMBER_CFI_PAGE_SHIFT)))
		return ember__error(EMBER_ERR_FORMAT, "bad packed counts (%u rows, %u rules, %u pages)",
				    h->nrows, h->nrules, h->npages);
	uint64_t len = ember__cfi_packed_layout(h->nrows, h->nrules, h->npages, NULL, NULL);
	if (h->rows_off < sizeof(*h) || h->rows_off % 8 != 0 || h->rows_off > size ||
	    len > size - h->rows_off || h->index_off != h->rows_off + len || h->index_off != size)
		return ember__error(EMBER_ERR_FORMAT, "packed arrays out of the file's bounds");
	ember__cfi_packed p;
	image_packed(h, data, &p);
	return ember__cfi_packed_check(&p);
}

int ember__table_cache_dir_from_env(char *buf, size_t size)
{
	/* A setuid or otherwise secure process takes no path from its
	 * environment: no cache at all. */
	if (getauxval(AT_SECURE))
		return 0;
	const char *v = ember__getenv(EMBER_TABLE_CACHE_ENV);
	int n;
	if (v && *v && strcmp(v, "on") != 0) {
		if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no"))
			return 0;
		if (v[0] != '/')
			return ember__error(EMBER_ERR_INVALID,
					    "%s=%s: expected off, on or an absolute directory",
					    EMBER_TABLE_CACHE_ENV, v), -1;
		n = snprintf(buf, size, "%s", v);
	} else {
		const char *xdg = ember__getenv("XDG_CACHE_HOME");
		const char *home = ember__getenv("HOME");
		if (xdg && xdg[0] == '/')
			n = snprintf(buf, size, "%s/emberprof/unwind", xdg);
		else if (home && home[0] == '/')
			n = snprintf(buf, size, "%s/.cache/emberprof/unwind", home);
		else
			return 0;
	}
	if (n < 0 || (size_t)n >= size)
		return ember__error(EMBER_ERR_INVALID, "unwind cache directory too long"), -1;
	return 1;
}

/* mkdir -p, each missing component 0700. 0 or -1 (errno). */
static int make_dirs(const char *dir)
{
	char tmp[4096];
	size_t n = strlen(dir);
	if (n == 0 || n >= sizeof(tmp))
		return errno = ENAMETOOLONG, -1;
	memcpy(tmp, dir, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
		return -1;
	struct stat st;
	if (stat(tmp, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode))
		return errno = ENOTDIR, -1;
	return 0;
}

/*
 * File systems whose files cannot be pulled from under a mapping except
 * by truncating them in place (which nothing of ours does): there a
 * table is mapped. Elsewhere (NFS, FUSE, CIFS...: a file replaced or
 * removed on another host makes a page fault of the mapping raise
 * SIGBUS, in the signal handler) it is copied into our own memory.
 */
static int local_fs(const char *dir)
{
	struct statfs sf;
	if (statfs(dir, &sf) != 0)
		return 0;
	switch ((unsigned long)sf.f_type) {
	case 0xEF53UL:     /* ext2/3/4 */
	case 0x58465342UL: /* xfs */
	case 0x9123683EUL: /* btrfs */
	case 0x01021994UL: /* tmpfs */
	case 0xF2F52010UL: /* f2fs */
	case 0x2FC12FC1UL: /* zfs */
	case 0x794C7630UL: /* overlayfs (containers) */
		return 1;
	default:
		return 0;
	}
}

/* The build id in the PT_NOTE segments of a loaded object. */
static int notes_build_id(const struct dl_phdr_info *info, ember__build_id *out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		size_t align = ph->p_align == 8 ? 8 : 4;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		size_t len = ph->p_memsz, off = 0;
		while (off + sizeof(ElfW(Nhdr)) <= len) {
			ElfW(Nhdr) nh;
			memcpy(&nh, p + off, sizeof(nh));
			size_t name_off = off + sizeof(nh);
			size_t desc_off = name_off + ((nh.n_namesz + align - 1) & ~(align - 1));
			size_t next = desc_off + ((nh.n_descsz + align - 1) & ~(align - 1));
			if (desc_off > len || nh.n_descsz > len - desc_off || next <= off)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(p + name_off, "GNU", 4) && nh.n_descsz >= 1 &&
			    nh.n_descsz <= EMBER_BUILD_ID_MAX) {
				memset(out, 0, sizeof(*out));
				out->len = nh.n_descsz;
				memcpy(out->id, p + desc_off, nh.n_descsz);
				return 1;
			}
			off = next;
		}
	}
	return 0;
}

/*
 * A module without a build id (Rust's own toolchain, rustc and its
 * libraries, is linked without one) is known by a digest of what its
 * table is built from, read in memory: its program headers and its whole
 * PT_GNU_EH_FRAME segment (.eh_frame_hdr: the start address of every
 * function with CFI and the offset of its FDE in .eh_frame), so any
 * change of layout, of a function's address or of an FDE's size gives
 * another key. The id is "ehfr", two independent 64-bit hashes of those
 * bytes and the FDE count (24 bytes; build ids are 8, 16 or 20). A module
 * without .eh_frame_hdr is not cached.
 */
static uint64_t mix64(uint64_t h, uint64_t w, uint64_t k)
{
	h ^= w * k;
	h = (h << 29) | (h >> 35);
	return h * 0x9E3779B97F4A7C15ULL + k;
}

static void hash_bytes(const uint8_t *p, size_t n, uint64_t h[2])
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h[0] = mix64(h[0], w, 0xff51afd7ed558ccdULL);
		h[1] = mix64(h[1], w ^ (uint64_t)i, 0xc4ceb9fe1a85ec53ULL);
	}
	uint64_t w = 0;
	memcpy(&w, p + i, n - i);
	h[0] = mix64(h[0], w ^ n, 0xff51afd7ed558ccdULL);
	h[1] = mix64(h[1], w + n, 0xc4ceb9fe1a85ec53ULL);
}

static int eh_frame_digest(const struct dl_phdr_info *info, ember__build_id *out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_GNU_EH_FRAME || ph->p_memsz < 12)
			continue;
		uint64_t h[2] = {0x243F6A8885A308D3ULL, 0x13198A2E03707344ULL};
		hash_bytes((const uint8_t *)info->dlpi_phdr, info->dlpi_phnum * sizeof(ElfW(Phdr)), h);
		hash_bytes((const uint8_t *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, h);
		uint32_t fdes = (uint32_t)((ph->p_memsz - 12) / 8);
		memset(out, 0, sizeof(*out));
		memcpy(out->id, "ehfr", 4);
		memcpy(out->id + 4, h, 16);
		memcpy(out->id + 20, &fdes, 4);
		out->len = 24;
		return 1;
	}
	return 0;
}

struct id_query {
	uint64_t addr;
	ember__build_id *id;
	uint64_t bias;
	int found;
};

static int id_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct id_query *q = data;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && q->addr >= lo && q->addr < lo + ph->p_memsz) {
			q->bias = info->dlpi_addr;
			q->found = notes_build_id(info, q->id) || eh_frame_digest(info, q->id);
			return 1;
		}
	}
	return 0;
}

int ember__module_build_id(uint64_t addr, ember__build_id *out, uint64_t *bias)
{
	struct id_query q = {addr, out, 0, 0};
	dl_iterate_phdr(id_cb, &q);
	if (q.found && bias)
		*bias = q.bias;
	return q.found;
}

int ember__table_cache_key(ember__table_cache *c, uint64_t addr, ember__build_id *id,
			   uint64_t *bias)
{
	if (ember__module_build_id(addr, id, bias))
		return 1;
	c->st.no_build_id++;
	return 0;
}

int ember__table_cache_open(ember__table_cache **out, const char *dir, const ember__logger *log)
{
	ember__table_cache *c = calloc(1, sizeof(*c));
	if (!c || !(c->dir = strdup(dir))) {
		free(c);
		return ember__error_oom("unwind table cache");
	}
	c->log = log;
	c->dir_ok = make_dirs(dir) == 0;
	if (!c->dir_ok) {
		ember__logf(c->log, EMBER_LOG_INFO, "unwind table cache %s unusable (%s): tables are built in "
		      "memory only", dir, strerror(errno));
		c->store_failures_logged = 1;
	}
	c->map_files = c->dir_ok && local_fs(dir);
	/* A directory we cannot write to (read-only, another owner's): loads
	 * only, and no table is built beyond the budget for a store that
	 * would fail (ember__table_cache_writable). */
	if (c->dir_ok && access(dir, W_OK | X_OK) != 0) {
		ember__logf(c->log, EMBER_LOG_INFO, "unwind table cache %s is not writable (%s): tables are "
		      "read from it but not stored", dir, strerror(errno));
		c->store_failures_logged = 1;
		c->st.store_failed++;
	}
	/* Who built the rows: this code's own build id (any rebuild of the
	 * agent changes it), else its version. */
	if (!ember__module_build_id((uint64_t)(uintptr_t)&ember__table_cache_open, &c->builder, NULL)) {
		static const char v[] = "emberprof " EMBER_ARCH_NAME;
		memset(&c->builder, 0, sizeof(c->builder));
		c->builder.len = sizeof(v) - 1;
		memcpy(c->builder.id, v, sizeof(v) - 1);
		c->builder.id[sizeof(v) - 1] = EMBER_VERSION_NUMBER & 0xff;
		c->builder.len++;
	}
	*out = c;
	return 0;
}

void ember__table_cache_free(ember__table_cache *c)
{
	if (!c)
		return;
	if (c->claimed.len)
		ember__table_cache_release(c, &c->claimed);
	free(c->dir);
	free(c);
}

/* DIR/<hex id>.<arch>.utab into buf; 0, or -1 if it does not fit. */
static int file_name(const ember__table_cache *c, const ember__build_id *id, char *buf, size_t size)
{
	char hex[2 * EMBER_BUILD_ID_MAX + 1];
	for (uint32_t i = 0; i < id->len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id->id[i]);
	hex[2 * id->len] = 0;
	int n = snprintf(buf, size, "%s/%s.%s.utab", c->dir, hex, EMBER_ARCH_NAME);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

int ember__table_cache_has(const ember__table_cache *c, const ember__build_id *id)
{
	char path[4352];
	return c && c->dir_ok && file_name(c, id, path, sizeof(path)) == 0 && access(path, R_OK) == 0;
}

static int same_id(const ember__build_id *a, const ember__build_id *b)
{
	return a->len == b->len && a->len <= EMBER_BUILD_ID_MAX && !memcmp(a->id, b->id, a->len);
}

int ember__table_cache_claim(ember__table_cache *c, const ember__build_id *id)
{
	char path[4352], claim[4400];
	if (!c || !c->dir_ok || file_name(c, id, path, sizeof(path)) != 0)
		return 0;
	snprintf(claim, sizeof(claim), "%s.building", path);
	for (int tries = 0; tries < 2; tries++) {
		int fd = open(claim, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
		if (fd >= 0) {
			close(fd);
			if (c->claimed.len) /* one claim at a time: the older one ends */
				ember__table_cache_release(c, &c->claimed);
			c->claimed = *id;
			return 1;
		}
		struct stat st;
		if (errno != EEXIST || stat(claim, &st) != 0 ||
		    time(NULL) - st.st_mtime < EMBER_TABLE_CACHE_CLAIM_S)
			return 0;
		unlink(claim); /* a claim that old: its process died building */
	}
	return 0;
}

void ember__table_cache_release(ember__table_cache *c, const ember__build_id *id)
{
	char path[4352], claim[4400];
	if (!c || !c->claimed.len || !same_id(&c->claimed, id) ||
	    file_name(c, id, path, sizeof(path)) != 0)
		return;
	snprintf(claim, sizeof(claim), "%s.building", path);
	unlink(claim);
	c->claimed.len = 0;
}

int ember__table_cache_writable(const ember__table_cache *c)
{
	return c && c->dir_ok && c->st.store_failed == 0;
}


int ember__table_cache_validate(const void *data, size_t size, const ember__build_id *id,
				const ember__build_id *builder)
{
	ember__table_cache_header h;
	if (size < sizeof(h))
		return ember__error(EMBER_ERR_FORMAT, "truncated: %zu bytes, no header", size);
	memcpy(&h, data, sizeof(h));
	if (memcmp(h.magic, EMBER_TABLE_CACHE_MAGIC, sizeof(h.magic)) != 0)
		return ember__error(EMBER_ERR_FORMAT, "not an unwind table cache file (magic)");
	if (h.check != ember__table_cache_header_check(&h))
		return ember__error(EMBER_ERR_FORMAT, "header checksum mismatch");
	if (h.version != EMBER_TABLE_CACHE_VERSION || h.header_size != sizeof(h) ||
	    h.row_size != sizeof(ember__cfi_row))
		return ember__error(EMBER_ERR_FORMAT, "format version %u, expected %u", h.version,
				    EMBER_TABLE_CACHE_VERSION);
	if (h.arch != EMBER_ARCH_ELF_MACHINE)
		return ember__error(EMBER_ERR_FORMAT, "architecture %u, expected %u", h.arch,
				    EMBER_ARCH_ELF_MACHINE);
	if (h.module.len == 0 || h.module.len > EMBER_BUILD_ID_MAX ||
	    h.builder.len > EMBER_BUILD_ID_MAX)
		return ember__error(EMBER_ERR_FORMAT, "bad build id length");
	if (id && !same_id(&h.module, id))
		return ember__error(EMBER_ERR_FORMAT, "another module's build id");
	if (builder && !same_id(&h.builder, builder))
		return ember__error(EMBER_ERR_FORMAT, "built by another emberprof build");
	if (h.file_size != size)
		return ember__error(EMBER_ERR_FORMAT, "size %zu, header says %llu", size,
				    (unsigned long long)h.file_size);
	if (h.packed > 1)
		return ember__error(EMBER_ERR_FORMAT, "unknown form %u", h.packed);
	if (h.packed)
		return validate_packed(&h, data, size);
	if (h.nrules || h.nsignal || h.npages || h.page0)
		return ember__error(EMBER_ERR_FORMAT, "packed counts in an unpacked table");
	uint64_t rows_end = h.rows_off + (uint64_t)h.nrows * sizeof(ember__cfi_row);
	uint64_t index_end = h.index_off + (uint64_t)h.nindex * sizeof(uint32_t);
	if (h.rows_off < sizeof(h) || h.rows_off % 8 != 0 || h.rows_off > size ||
	    rows_end > size || h.index_off < rows_end || h.index_off % 4 != 0 ||
	    h.index_off > size || index_end > size)
		return ember__error(EMBER_ERR_FORMAT, "rows or index out of the file's bounds");
	if ((h.nrows == 0 && h.nindex != 0) ||
	    (h.nindex && (h.index_shift < EMBER_CFI_INDEX_SHIFT || h.index_shift > 31)))
		return ember__error(EMBER_ERR_FORMAT, "bad index (%u entries, shift %u)", h.nindex,
				    h.index_shift);
	/* The index must point at rows (the handler also checks each use). */
	const uint32_t *index = (const uint32_t *)((const uint8_t *)data + h.index_off);
	for (uint32_t i = 0, prev = 0; i < h.nindex; i++) {
		uint32_t v;
		memcpy(&v, &index[i], sizeof(v));
		if (v >= h.nrows || v < prev)
			return ember__error(EMBER_ERR_FORMAT, "index entry %u out of order", i);
		prev = v;
	}
	return 0;
}

/* Reads the whole file into a heap buffer (the copy mode). */
static void *read_all(int fd, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return NULL;
	size_t got = 0;
	while (got < size) {
		ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return NULL;
		}
		got += (size_t)n;
	}
	return buf;
}

/* A table over a validated file image: mapped (rows and index point into
 * it) or copied (its own heap arrays; the image is freed by the caller). */
static int table_from_image(const uint8_t *img, size_t size, int mapped, ember__cfi_table **out)
{
	ember__table_cache_header h;
	memcpy(&h, img, sizeof(h));
	ember__cfi_table *t = calloc(1, sizeof(*t));
	if (!t)
		return EMBER_ERR_NOMEM;
	t->nrows = h.nrows;
	t->nindex = h.nindex;
	t->index_shift = h.index_shift;
	t->stats = h.stats;
	if (h.packed) {
		size_t len = (size_t)(h.file_size - h.rows_off);
		if (mapped) {
			t->map = (void *)img;
			t->map_len = size;
			image_packed(&h, img, &t->packed);
			t->bytes = sizeof(*t) + size;
		} else {
			t->block = malloc(len);
			if (!t->block) {
				ember__cfi_table_free(t);
				return EMBER_ERR_NOMEM;
			}
			memcpy(t->block, img + h.rows_off, len);
			t->block_len = len;
			ember__table_cache_header hb = h;
			hb.rows_off = 0;
			image_packed(&hb, t->block, &t->packed);
			t->bytes = sizeof(*t) + len;
		}
		*out = t;
		return 0;
	}
	size_t rbytes = (size_t)h.nrows * sizeof(ember__cfi_row);
	size_t ibytes = (size_t)h.nindex * sizeof(uint32_t);
	if (mapped) {
		t->map = (void *)img;
		t->map_len = size;
		t->rows = (ember__cfi_row *)(img + h.rows_off);
		t->index = h.nindex ? (uint32_t *)(img + h.index_off) : NULL;
		t->bytes = sizeof(*t) + size;
	} else {
		t->rows = malloc(rbytes ? rbytes : 1);
		t->index = h.nindex ? malloc(ibytes) : NULL;
		if (!t->rows || (h.nindex && !t->index)) {
			ember__cfi_table_free(t);
			return EMBER_ERR_NOMEM;
		}
		memcpy(t->rows, img + h.rows_off, rbytes);
		if (ibytes)
			memcpy(t->index, img + h.index_off, ibytes);
		t->bytes = sizeof(*t) + rbytes + ibytes;
	}
	if (h.nrows == 0 && !mapped) {
		free(t->rows);
		t->rows = NULL;
	}
	*out = t;
	return 0;
}

int ember__table_cache_load(ember__table_cache *c, const ember__build_id *id,
			    ember__cfi_table **out)
{
	char path[4352];
	*out = NULL;
	if (!c->dir_ok || file_name(c, id, path, sizeof(path)) != 0)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		c->st.misses++;
		return 0;
	}
	struct stat st;
	void *img = NULL;
	int mapped = 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) {
		close(fd);
		c->st.misses++;
		return 0;
	}
	size_t size = (size_t)st.st_size;
	if (size >= sizeof(ember__table_cache_header) && c->map_files) {
		img = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (img == MAP_FAILED)
			img = NULL;
		else
			mapped = 1;
	}
	if (!img)
		img = read_all(fd, size);
	close(fd);
	if (!img) {
		c->st.rejected++;
		ember__logf(c->log, EMBER_LOG_DEBUG, "unwind table cache: cannot read %s: %s", path,
		      strerror(errno));
		return 0;
	}
	int rc = ember__table_cache_validate(img, size, id, &c->builder);
	if (rc == 0)
		rc = table_from_image(img, size, mapped, out);
	if (rc != 0 || !mapped) {
		if (mapped)
			munmap(img, size);
		else
			free(img);
	}
	if (rc == EMBER_ERR_NOMEM)
		return ember__error_oom("unwind table from the cache");
	if (rc != 0) {
		c->st.rejected++;
		ember__logf(c->log, EMBER_LOG_DEBUG, "unwind table cache: %s rejected (%s), rebuilding it", path,
		      ember_last_error());
		return 0;
	}
	c->st.hits++;
	c->st.mapped += (uint64_t)mapped;
	return 1;
}

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static int store_failed(ember__table_cache *c, const char *what, const char *path, int err)
{
	c->st.store_failed++;
	/* The first failure says why at info (a read-only or full disk is the
	 * user's business, not worth a warning in every process); the rest at
	 * debug. */
	ember__logf(c->log, c->store_failures_logged ? EMBER_LOG_DEBUG : EMBER_LOG_INFO,
	      "unwind table cache: cannot %s %s: %s (tables stay in memory; no more stores are "
	      "tried in this process)", what, path, strerror(err));
	c->store_failures_logged = 1;
	return ember__error(EMBER_ERR_IO, "unwind table cache: cannot %s %s: %s", what, path,
			    strerror(err));
}

int ember__table_cache_store(ember__table_cache *c, const ember__build_id *id,
			     const ember__cfi_table *t)
{
	char path[4352], tmp[4500];
	if (!c->dir_ok)
		return ember__error(EMBER_ERR_IO, "unwind table cache: no directory");
	if (id->len == 0 || id->len > EMBER_BUILD_ID_MAX || file_name(c, id, path, sizeof(path)))
		return ember__error(EMBER_ERR_INVALID, "unwind table cache: bad build id");
	ember__table_cache_header h;
	ember__table_cache_header_init(&h, id, &c->builder, t);
	h.stats = t->stats;
	h.check = ember__table_cache_header_check(&h);

	int fd = -1;
	for (int tries = 0; fd < 0 && tries < 8; tries++) {
		snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%u", path, (long)getpid(), c->tmp_seq++);
		/* above the program's numbers while a table is written
		 * (report/local.c says why) */
		fd = ember__ownfd_raise(
			open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600));
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		return store_failed(c, "create a file in", c->dir, errno);
	static const uint8_t pad[8];
	int rc = write_all(fd, &h, sizeof(h));
	if (rc == 0 && h.rows_off > sizeof(h))
		rc = write_all(fd, pad, (size_t)(h.rows_off - sizeof(h)));
	if (rc == 0 && h.packed)
		rc = write_all(fd, t->packed.rows, (size_t)(h.file_size - h.rows_off));
	else if (rc == 0 && h.nrows)
		rc = write_all(fd, t->rows, (size_t)h.nrows * sizeof(ember__cfi_row));
	if (rc == 0 && h.nindex)
		rc = write_all(fd, t->index, (size_t)h.nindex * sizeof(uint32_t));
	int err = errno;
	if (close(fd) != 0 && rc == 0) {
		rc = -1;
		err = errno;
	}
	if (rc != 0) {
		unlink(tmp);
		return store_failed(c, "write", tmp, err);
	}
	if (rename(tmp, path) != 0) {
		err = errno;
		unlink(tmp);
		return store_failed(c, "rename into", path, err);
	}
	c->st.stored++;
	return 0;
}

void ember__table_cache_get_stats(const ember__table_cache *c, ember__table_cache_stats *out)
{
	*out = c->st;
}

const char *ember__table_cache_path(const ember__table_cache *c)
{
	return c->dir;
}
