/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind_tables.c - the registry of DWARF unwind tables and the snapshot
 * the handler reads (unwind_tables.h).
 */
#include "cfi/unwind_tables.h"

#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cfi/cfi_elf.h"
#include "cfi/cfi_pack.h"
#include "cfi/table_cache.h"
#include "sample/handler.h"
#include "symbols/procmaps.h"
#include "util/dlgen.h"
#include "util/error.h"
#include "util/log.h"

typedef struct mod_table {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	uint64_t file_base;    /* address of file offset 0 (the vDSO: its start) */
	uint64_t bias;
	ember__cfi_table *table; /* NULL: not built yet (pending) or the build failed */
	int pending;           /* lazy: no build tried yet */
	int wanted;            /* lazy: a sample landed in it, build at the next chance */
	int seen;
	/* what a (lazy) build needs: the mapping first seen */
	char *path;
	uint64_t map_start, map_end, map_offset;
} mod_table;

/* One executable mapping of the last refresh, in address order. */
typedef struct range {
	uint64_t start, end;
	size_t mod; /* index in mods */
} range;

/* Memory that a handler may still read: freed once none runs. */
typedef struct retired {
	ember__unwind_snapshot *snap;
	ember__cfi_table *table;
} retired;

struct ember__unwind_tables {
	_Atomic(const ember__unwind_snapshot *) *slot;
	const ember__logger *log;
	mod_table *mods;
	size_t nmods, capmods;
	ember__unwind_snapshot *cur;
	size_t cur_bytes;
	retired *ret;
	size_t nret, capret;
	range *ranges;
	size_t nranges, capranges;
	ember__dlgen dl; /* the loader's counters at the last refresh */
	int lazy;
	int64_t built_ns;    /* lazy builds that made a table: their CPU time... */
	uint64_t built_fdes; /* ...and their FDEs (estimate_ns) */
	ember__table_cache *cache; /* NULL: none (ember__unwind_tables_use_cache) */
	ember__unwind_tables_stats st;
};

/* Build times are CPU time of the building thread: what a build costs
 * the program, whatever else the machine runs. */
static int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int ember__unwind_tables_new(ember__unwind_tables **out,
			     _Atomic(const ember__unwind_snapshot *) *slot, const ember__logger *log)
{
	ember__unwind_tables *t = calloc(1, sizeof(*t));
	if (!t)
		return ember__error_oom("unwind table registry");
	t->slot = slot;
	t->log = log;
	*out = t;
	return 0;
}

static int push_retired(ember__unwind_tables *t, ember__unwind_snapshot *snap, ember__cfi_table *table)
{
	if (t->nret == t->capret) {
		size_t ncap = t->capret ? t->capret * 2 : 16;
		retired *n = realloc(t->ret, ncap * sizeof(*n));
		if (!n)
			return EMBER_ERR_NOMEM;
		t->ret = n;
		t->capret = ncap;
	}
	t->ret[t->nret].snap = snap;
	t->ret[t->nret].table = table;
	t->nret++;
	return 0;
}

/* Frees retired memory if no handler runs now (see the header). */
static void free_retired(ember__unwind_tables *t)
{
	if (t->nret == 0)
		return;
	/* Orders the snapshot store before the in-flight load: a handler
	 * counted in flight before it loads the snapshot pointer (handler.c,
	 * both sequentially consistent), so zero here means every handler that
	 * could hold a retired pointer has returned. */
	atomic_thread_fence(memory_order_seq_cst);
	if (ember__sigpath_inflight() != 0)
		return;
	for (size_t i = 0; i < t->nret; i++) {
		free(t->ret[i].snap);
		if (t->ret[i].table) {
			ember__cfi_table_free(t->ret[i].table);
			t->st.freed++;
		}
	}
	t->nret = 0;
}

static mod_table *find_mod(ember__unwind_tables *t, const ember__procmap *m, uint64_t file_base)
{
	for (size_t i = 0; i < t->nmods; i++) {
		mod_table *x = &t->mods[i];
		if (x->inode == m->inode && x->dev_major == m->dev_major &&
		    x->dev_minor == m->dev_minor && x->file_base == file_base)
			return x;
	}
	return NULL;
}

/* The cache key of x (its build id, and the bias the loader reports); 0
 * without a cache or a build id. The vDSO's table is built from memory,
 * cheap: never cached. */
static int cache_key(ember__unwind_tables *t, const mod_table *x, ember__build_id *id,
		     uint64_t *bias)
{
	if (!t->cache || !strcmp(x->path, "[vdso]"))
		return 0;
	return ember__table_cache_key(t->cache, x->map_start + (x->map_end - x->map_start) / 2, id,
				      bias);
}

/* x's table from the cache: 1 if loaded (logged, counted). */
static int cache_load(ember__unwind_tables *t, mod_table *x, const ember__build_id *id,
		      uint64_t bias, int64_t t0)
{
	if (ember__table_cache_load(t->cache, id, &x->table) != 1)
		return 0;
	int64_t took = cpu_ns() - t0;
	t->st.build_ns += took;
	t->st.cache_loaded++;
	x->bias = bias;
	ember__logf(t->log, EMBER_LOG_DEBUG,
	      "unwind table for %s%s: %u rows, %zu bytes loaded from the cache in %.2f ms of CPU",
	      x->path, t->lazy ? " (a sample landed in it)" : "", x->table->nrows, x->table->bytes,
	      (double)took / 1e6);
	return 1;
}

/* Writes x's fresh table to the cache, if it can be written. */
static void cache_store(ember__unwind_tables *t, const mod_table *x, const ember__build_id *id)
{
	if (!ember__table_cache_writable(t->cache))
		return;
	int64_t t0 = cpu_ns();
	if (ember__table_cache_store(t->cache, id, x->table) == 0) {
		t->st.cache_stored++;
		ember__logf(t->log, EMBER_LOG_DEBUG, "unwind table for %s stored in the cache in %.2f ms",
		      x->path, (double)(cpu_ns() - t0) / 1e6);
	} else {
		t->st.cache_failed++;
	}
	t->st.build_ns += cpu_ns() - t0;
}

/* Whether the cache serves x: its table is there, or a build of it would
 * be stored (paid once for every later process of the binary) and no
 * other process is building it now (ember__table_cache_claim: the claim
 * is released after build_mod). */
static int cache_serves(ember__unwind_tables *t, const mod_table *x)
{
	ember__build_id id;
	uint64_t bias;
	return cache_key(t, x, &id, &bias) &&
	       (ember__table_cache_has(t->cache, &id) ||
		(ember__table_cache_writable(t->cache) && ember__table_cache_claim(t->cache, &id)));
}

int ember__unwind_tables_use_cache(ember__unwind_tables *t, const char *dir)
{
	ember__table_cache_free(t->cache);
	t->cache = NULL;
	return dir ? ember__table_cache_open(&t->cache, dir, t->log) : 0;
}

/* Builds x's table now (x->pending cleared); a failure is logged and
 * counted, and leaves x without a table (not retried while mapped). */
static void build_mod(ember__unwind_tables *t, mod_table *x)
{
	int vdso = !strcmp(x->path, "[vdso]");
	ember__cfi_module_src src = {
		.path = vdso ? NULL : x->path,
		.image = vdso ? (const void *)(uintptr_t)x->map_start : NULL,
		.image_size = (size_t)(x->map_end - x->map_start),
		.map_start = x->map_start,
		.map_end = x->map_end,
		.map_offset = x->map_offset,
		.inode = x->inode,
		.dev_major = x->dev_major,
		.dev_minor = x->dev_minor,
	};
	ember__cfi_module_info info;
	x->pending = 0;
	x->wanted = 0;
	int64_t t0 = cpu_ns();
	ember__build_id id;
	uint64_t id_bias = 0;
	int keyed = cache_key(t, x, &id, &id_bias);
	if (keyed && cache_load(t, x, &id, id_bias, t0))
		return;
	int rc = ember__cfi_build_module(&src, &x->table, &info);
	int64_t took = cpu_ns() - t0;
	t->st.build_ns += took;
	if (rc) {
		t->st.failed++;
		ember__logf(t->log, EMBER_LOG_DEBUG, "no unwind table for %s: %s", x->path, ember_last_error());
		x->table = NULL;
		if (keyed)
			ember__table_cache_release(t->cache, &id);
		return;
	}
	x->bias = info.bias;
	t->st.built++;
	t->st.bad_fdes += x->table->stats.bad_fdes;
	const ember__cfi_stats *s = &x->table->stats;
	ember__logf(t->log, EMBER_LOG_DEBUG,
	      "unwind table for %s%s: %u rows, %zu bytes in %.1f ms of CPU from "
	      "%s%s%s%s (%u FDEs, %u skipped, %u left to frame pointers; %u rows for PLT "
	      "stubs without CFI; %s)",
	      x->path, t->lazy ? " (a sample landed in it)" : "", x->table->nrows, x->table->bytes,
	      (double)took / 1e6,
	      info.eh_frame_bytes ? (info.used_hdr ? ".eh_frame via .eh_frame_hdr" : ".eh_frame") : "",
	      info.eh_frame_bytes && info.debug_frame_bytes ? " and " : "",
	      info.debug_frame_bytes ? ".debug_frame " : (info.eh_frame_bytes ? "" : "no CFI"),
	      info.debug_file[0] ? info.debug_file : "", s->fdes, s->bad_fdes, s->unknown_rows,
	      s->fill_rows,
	      s->unpacked_rules ? "8-byte rows: more than 65,535 distinct rules"
	      : s->unpacked_small ? "8-byte rows: too small to pack"
				  : "packed");
	/* Rows are relative to the load bias the loader reports (dl_iterate_phdr):
	 * another process loads the module at its own bias and uses them as they are. */
	if (keyed && info.bias == id_bias)
		cache_store(t, x, &id);
	if (keyed)
		ember__table_cache_release(t->cache, &id); /* cache_serves' claim, if any */
}

/* A new module; its table is built now, or (lazy) left pending. */
static mod_table *add_mod(ember__unwind_tables *t, const ember__procmap *m, uint64_t file_base)
{
	if (t->nmods == t->capmods) {
		size_t ncap = t->capmods ? t->capmods * 2 : 32;
		mod_table *n = realloc(t->mods, ncap * sizeof(*n));
		if (!n)
			return NULL;
		t->mods = n;
		t->capmods = ncap;
	}
	char *path = strdup(m->path);
	if (!path)
		return NULL;
	mod_table *x = &t->mods[t->nmods++];
	memset(x, 0, sizeof(*x));
	x->dev_major = m->dev_major;
	x->dev_minor = m->dev_minor;
	x->inode = m->inode;
	x->file_base = file_base;
	x->path = path;
	x->map_start = m->start;
	x->map_end = m->end;
	x->map_offset = m->offset;
	x->pending = 1;
	if (!t->lazy)
		build_mod(t, x);
	else
		ember__logf(t->log, EMBER_LOG_DEBUG, "module %s mapped: its unwind table waits for a sample", path);
	return x;
}

static int push_range(ember__unwind_tables *t, uint64_t start, uint64_t end, size_t mod)
{
	if (t->nranges == t->capranges) {
		size_t ncap = t->capranges ? t->capranges * 2 : 32;
		range *n = realloc(t->ranges, ncap * sizeof(*n));
		if (!n)
			return EMBER_ERR_NOMEM;
		t->ranges = n;
		t->capranges = ncap;
	}
	t->ranges[t->nranges++] = (range){start, end, mod};
	return 0;
}

static int same_snapshot(const ember__unwind_snapshot *a, const ember__unwind_snapshot *b)
{
	if (!a || !b || a->n != b->n)
		return 0;
	for (uint32_t i = 0; i < a->n; i++) {
		const ember__unwind_module *x = &a->mods[i], *y = &b->mods[i];
		if (x->start != y->start || x->end != y->end || x->base != y->base ||
		    x->rows != y->rows || x->nrows != y->nrows || x->packed.rows != y->packed.rows ||
		    x->packed.nrows != y->packed.nrows || x->pending != y->pending)
			return 0;
	}
	return 1;
}


/*
 * Publishes a snapshot of the modules of the last refresh (ranges): those
 * with rows, and (lazy) those still pending, marked so that the handler
 * walks their frames by frame pointers and counts it. Updates the stats.
 */
static int publish(ember__unwind_tables *t)
{
	ember__unwind_snapshot *snap =
		malloc(sizeof(*snap) + (t->nranges ? t->nranges : 1) * sizeof(snap->mods[0]));
	if (!snap)
		return ember__error_oom("unwind snapshot");
	snap->n = 0;
	for (size_t i = 0; i < t->nranges; i++) {
		const mod_table *x = &t->mods[t->ranges[i].mod];
		if (!x->pending && (!x->table || x->table->nrows == 0))
			continue;
		ember__unwind_module *um = &snap->mods[snap->n++];
		memset(um, 0, sizeof(*um));
		um->start = (uintptr_t)t->ranges[i].start;
		um->end = (uintptr_t)t->ranges[i].end;
		if (x->pending) {
			um->pending = 1;
			continue;
		}
		um->base = (uintptr_t)x->bias;
		ember__cfi_table_to_module(x->table, um);
	}
	if (same_snapshot(t->cur, snap)) {
		free(snap);
	} else if (push_retired(t, t->cur, NULL) == 0) {
		atomic_exchange_explicit(t->slot, snap, memory_order_seq_cst);
		t->cur = snap;
		t->st.snapshots++;
	} else {
		free(snap);
		return ember__error_oom("unwind snapshot");
	}
	uint64_t bytes = 0, rows = 0, unpacked_rules = 0, unpacked_small = 0;
	t->st.modules = t->st.pending = 0;
	for (size_t i = 0; i < t->nmods; i++) {
		const mod_table *x = &t->mods[i];
		t->st.pending += x->pending != 0;
		if (x->table) {
			bytes += x->table->bytes;
			rows += x->table->nrows;
			t->st.modules += x->table->nrows != 0;
			unpacked_rules += x->table->stats.unpacked_rules != 0;
			unpacked_small += x->table->stats.unpacked_small != 0;
		}
	}
	t->cur_bytes = bytes + sizeof(*t->cur) + t->cur->n * sizeof(t->cur->mods[0]);
	t->st.bytes = t->cur_bytes;
	t->st.rows = rows;
	t->st.unpacked_rules = unpacked_rules;
	t->st.unpacked_small = unpacked_small;
	return 0;
}

static void free_mod(mod_table *x)
{
	free(x->path);
	x->path = NULL;
}

int ember__unwind_tables_refresh(ember__unwind_tables *t)
{
	ember__procmaps maps = EMBER_PROCMAPS_INIT;
	ember__dlgen_read(&t->dl);
	int rc = ember__procmaps_read_self(&maps);
	if (rc)
		return rc;
	t->st.refreshes++;
	int first = t->st.refreshes == 1;
	for (size_t i = 0; i < t->nmods; i++)
		t->mods[i].seen = 0;
	t->nranges = 0;
	for (size_t i = 0; i < maps.n; i++) {
		const ember__procmap *m = &maps.maps[i];
		if (!(m->perms & EMBER_MAP_EXEC))
			continue;
		int vdso = !strcmp(m->path, "[vdso]");
		if (!vdso && (m->inode == 0 || m->path[0] != '/'))
			continue; /* anonymous code (JIT), [vsyscall]: no CFI to read */
		uint64_t file_base = m->start - m->offset;
		mod_table *x = find_mod(t, m, file_base);
		if ((!x && !(x = add_mod(t, m, file_base))) ||
		    push_range(t, m->start, m->end, (size_t)(x - t->mods))) {
			ember__procmaps_free(&maps);
			t->nranges = 0; /* the mods may be incomplete; the next refresh redoes them */
			return ember__error_oom("unwind table registry");
		}
		x->seen = 1;
	}
	ember__procmaps_free(&maps);

	/* Modules gone since the last refresh: their tables retire. */
	size_t w = 0;
	size_t *remap = malloc((t->nmods ? t->nmods : 1) * sizeof(*remap));
	if (!remap)
		return ember__error_oom("unwind table registry");
	for (size_t i = 0; i < t->nmods; i++) {
		remap[i] = w;
		if (t->mods[i].seen) {
			t->mods[w++] = t->mods[i];
			continue;
		}
		if (t->mods[i].table) {
			if (push_retired(t, NULL, t->mods[i].table)) {
				/* Cannot track it: leak rather than free what a handler may read. */
				t->mods[w++] = t->mods[i];
				continue;
			}
			t->st.retired++;
		}
		free_mod(&t->mods[i]);
	}
	t->nmods = w;
	for (size_t i = 0; i < t->nranges; i++)
		t->ranges[i].mod = remap[t->ranges[i].mod];
	free(remap);

	rc = publish(t);
	if (rc)
		return rc;
	if (first && t->lazy)
		ember__logf(t->log, EMBER_LOG_INFO,
		      "DWARF unwind tables: built lazily, on the agent thread, for the modules samples "
		      "land in (%" PRIu64 " modules mapped)", t->st.pending);
	else if (first)
		ember__logf(t->log, EMBER_LOG_INFO,
		      "DWARF unwind tables: %" PRIu64 " modules, %" PRIu64 " rows, %.1f KiB, built in %.1f ms",
		      t->st.modules, t->st.rows, (double)t->cur_bytes / 1024.0, (double)t->st.build_ns / 1e6);
	free_retired(t);
	return 0;
}

void ember__unwind_tables_set_lazy(ember__unwind_tables *t, int lazy)
{
	t->lazy = lazy != 0;
	t->st.lazy = (uint64_t)t->lazy;
}

/* The range holding addr (ranges are sorted and disjoint), or NULL. */
static const range *find_range(const ember__unwind_tables *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->ranges[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= t->ranges[lo - 1].end)
		return NULL;
	return &t->ranges[lo - 1];
}

int ember__unwind_tables_note(ember__unwind_tables *t, const uint64_t *pcs, uint32_t n)
{
	if (!t || t->st.pending == 0)
		return 0;
	int any = 0;
	const range *last = NULL;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t a = i ? pcs[i] - 1 : pcs[i]; /* a caller: inside its call */
		if (last && a >= last->start && a < last->end)
			continue;
		last = find_range(t, a);
		if (!last)
			continue;
		mod_table *x = &t->mods[last->mod];
		if (x->pending && !x->wanted) {
			x->wanted = 1;
			any = 1;
		}
	}
	return any;
}

int ember__unwind_tables_wanted(const ember__unwind_tables *t)
{
	for (size_t i = 0; t && t->st.pending && i < t->nmods; i++)
		if (t->mods[i].pending && t->mods[i].wanted)
			return 1;
	return 0;
}

/* dl_iterate_phdr: the FDE count of the loaded object holding addr, from
 * the size of its .eh_frame_hdr (PT_GNU_EH_FRAME: 12 bytes, then 8 per
 * FDE), read from the program headers in memory, no file opened. */
struct fde_query {
	uint64_t addr;
	uint64_t fdes;
	int found;
};

static int fde_count_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct fde_query *q = data;
	(void)size;
	int holds = 0;
	uint64_t hdr = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && q->addr >= lo && q->addr < lo + ph->p_memsz)
			holds = 1;
		if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = ph->p_memsz;
	}
	if (!holds)
		return 0;
	q->found = 1;
	q->fdes = hdr > 12 ? (hdr - 12) / 8 : 0;
	return 1;
}

/* A module's FDE count (its .eh_frame_hdr's), or 0 when it cannot be told. */
static uint64_t module_fdes(const mod_table *x)
{
	/* The middle of the mapping: its page-aligned start may lie below
	 * the segment's first byte (lld's layouts). */
	struct fde_query q = {x->map_start + (x->map_end - x->map_start) / 2, 0, 0};
	dl_iterate_phdr(fde_count_cb, &q);
	return q.found ? q.fdes : 0;
}

/*
 * What building x's table should cost in CPU time, from its FDE count and
 * the speed of the builds so far, once 2,000 FDEs were built (libc alone
 * has 3,713), else 3 us an FDE: the builds measured on the 2-vCPU machine
 * of docs/BENCHMARKS.md took 1.4 (python3.11) to 3.4 (ld.so) us. A module whose
 * FDEs cannot be counted (no .eh_frame_hdr: .debug_frame only, or not
 * loaded through the dynamic loader) is taken as small.
 */
static int64_t estimate_ns(const ember__unwind_tables *t, const mod_table *x)
{
	double per_fde = t->built_fdes >= 2000 ? (double)t->built_ns / (double)t->built_fdes
						: 3000.0;
	return (int64_t)(per_fde * (double)module_fdes(x));
}

int ember__unwind_tables_build_wanted(ember__unwind_tables *t, int64_t app_cpu_ns)
{
	if (!t)
		return 0;
	int rc = 0;
	uint64_t deferred = 0;
	/* Each table is published as soon as it is built: a big module
	 * (hundreds of ms) does not hold back the small ones. */
	for (size_t i = 0; rc == 0 && i < t->nmods; i++) {
		mod_table *x = &t->mods[i];
		if (!x->pending || !x->wanted)
			continue;
		int64_t est = estimate_ns(t, x);
		if (est > EMBER_UNWIND_SMALL_BUILD_NS &&
		    t->st.build_ns + est > app_cpu_ns / 100 * EMBER_UNWIND_BUILD_BUDGET_PCT &&
		    !cache_serves(t, x)) {
			deferred++; /* not yet worth it: the program has not run long enough */
			continue;
		}
		ember__logf(t->log, EMBER_LOG_DEBUG, "building the unwind table of %s: about %.1f ms of CPU "
		      "(%" PRIu64 " FDEs), the program used %.1f ms", x->path, (double)est / 1e6,
		      module_fdes(x), (double)app_cpu_ns / 1e6);
		int64_t b0 = t->st.build_ns;
		uint64_t loaded = t->st.cache_loaded;
		build_mod(t, x);
		/* a table from the cache says nothing of what a build costs */
		if (x->table && t->st.cache_loaded == loaded) {
			t->built_ns += t->st.build_ns - b0;
			t->built_fdes += x->table->stats.fdes + x->table->stats.bad_fdes;
		}
		t->st.lazy_built++;
		rc = publish(t);
	}
	t->st.deferred = deferred;
	free_retired(t);
	return rc;
}

int ember__unwind_tables_poll(ember__unwind_tables *t)
{
	ember__dlgen now;
	ember__dlgen_read(&now);
	int rc = 0;
	/* Without the counters (not glibc) only explicit refreshes happen. */
	if (ember__dlgen_moved(&t->dl, &now))
		rc = ember__unwind_tables_refresh(t);
	else
		free_retired(t);
	return rc;
}

void ember__unwind_tables_get_stats(const ember__unwind_tables *t, ember__unwind_tables_stats *out)
{
	*out = t->st;
	if (t->cache) {
		ember__table_cache_stats cs;
		ember__table_cache_get_stats(t->cache, &cs);
		out->cache_rejected = cs.rejected;
		out->cache_no_id = cs.no_build_id;
	}
}

void ember__unwind_tables_detach(ember__unwind_tables *t)
{
	atomic_store_explicit(t->slot, NULL, memory_order_seq_cst);
	for (size_t i = 0; i < t->nret; i++) {
		free(t->ret[i].snap);
		if (t->ret[i].table) {
			ember__cfi_table_free(t->ret[i].table);
			t->st.freed++;
		}
	}
	t->nret = 0;
	free(t->cur);
	t->cur = NULL;
}

void ember__unwind_tables_attach(ember__unwind_tables *t,
				 _Atomic(const ember__unwind_snapshot *) *slot)
{
	t->slot = slot;
	t->dl.known = 0; /* the next poll refreshes */
}

void ember__unwind_tables_free(ember__unwind_tables *t)
{
	if (!t)
		return;
	atomic_store_explicit(t->slot, NULL, memory_order_seq_cst);
	for (size_t i = 0; i < t->nret; i++) {
		free(t->ret[i].snap);
		ember__cfi_table_free(t->ret[i].table);
	}
	for (size_t i = 0; i < t->nmods; i++) {
		ember__cfi_table_free(t->mods[i].table);
		free_mod(&t->mods[i]);
	}
	free(t->cur);
	free(t->ret);
	free(t->ranges);
	free(t->mods);
	ember__table_cache_free(t->cache);
	free(t);
}
