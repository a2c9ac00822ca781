/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_mods.c - modules of a tree sampled from outside: identity, layout
 * (program headers) and unwind tables, each read once (tree_mods.h).
 */
#include "tree/tree_mods.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cfi/unwind_tables.h"
#include "cfi/cfi_elf.h"
#include "emberprof.h"
#include "unwind/arch.h"
#include "util/error.h"
#include "util/vdso.h"

struct ember__tmods {
	ember__tmod **mods;
	size_t n, cap;
	ember__tmods_stats st;
	uint64_t gen;
	int budget;              /* ember__tmods_set_budget was called */
	uint64_t cpu_ns;         /* the tree's CPU time so far */
	uint64_t built_ns, built_fdes; /* the builds so far, for estimates */
};

void ember__tmods_set_budget(ember__tmods *r, uint64_t cpu_ns)
{
	r->budget = 1;
	r->cpu_ns = cpu_ns;
}

int ember__tmods_new(ember__tmods **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : ember__error_oom("tree modules");
}

void ember__tmods_free(ember__tmods *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		ember__cfi_table_free(r->mods[i]->table);
		free(r->mods[i]->path);
		free(r->mods[i]);
	}
	free(r->mods);
	free(r);
}

ember__tmod *ember__tmods_get(ember__tmods *r, const char *path, uint32_t maj, uint32_t min,
			      uint64_t ino)
{
	int vdso = strcmp(path, "[vdso]") == 0;
	/* Few modules (tens): a linear scan, newest first. */
	for (size_t i = r->n; i-- > 0;) {
		ember__tmod *m = r->mods[i];
		if (vdso ? m->vdso
			 : (!m->vdso && m->ino == ino && m->maj == maj && m->min == min &&
			    strcmp(m->path, path) == 0))
			return m;
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 32;
		ember__tmod **n = realloc(r->mods, cap * sizeof(*n));
		if (!n)
			return NULL;
		r->mods = n;
		r->cap = cap;
	}
	ember__tmod *m = calloc(1, sizeof(*m));
	char *p = strdup(path);
	if (!m || !p) {
		free(m);
		free(p);
		return NULL;
	}
	m->id = (uint32_t)r->n;
	m->path = p;
	m->maj = maj;
	m->min = min;
	m->ino = ino;
	m->vdso = vdso;
	r->mods[r->n++] = m;
	r->st.modules = r->n;
	return m;
}

/* Keeps the PT_LOAD segments of headers eh/ph (already checked). */
static int take_loads(ember__tmod *m, const ElfW(Ehdr) *eh, const ElfW(Phdr) *ph)
{
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EMBER_ARCH_ELF_MACHINE)
		return 0;
	m->nloads = 0;
	for (int i = 0; i < eh->e_phnum && m->nloads < EMBER_TMOD_LOADS_MAX; i++) {
		/* .eh_frame_hdr: 12 bytes, then 8 per FDE */
		if (ph[i].p_type == PT_GNU_EH_FRAME && ph[i].p_memsz > 12)
			m->fdes = (ph[i].p_memsz - 12) / 8;
		if (ph[i].p_type != PT_LOAD)
			continue;
		m->loads[m->nloads].vaddr = ph[i].p_vaddr;
		m->loads[m->nloads].offset = ph[i].p_offset;
		m->loads[m->nloads].filesz = ph[i].p_filesz;
		m->loads[m->nloads].memsz = ph[i].p_memsz;
		m->nloads++;
	}
	return m->nloads > 0;
}

static int read_layout(ember__tmod *m)
{
	if (m->vdso) {
		size_t size;
		const ElfW(Ehdr) *eh = ember__vdso_image(&size);
		if (!eh)
			return 0;
		return take_loads(m, eh, (const void *)((const char *)eh + eh->e_phoff));
	}
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ElfW(Ehdr) eh;
	ElfW(Phdr) ph[64];
	int ok = pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
		 memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_phentsize == sizeof(ElfW(Phdr)) &&
		 eh.e_phnum > 0 && eh.e_phnum <= 64;
	if (ok) {
		size_t len = (size_t)eh.e_phnum * sizeof(ElfW(Phdr));
		ok = pread(fd, ph, len, (off_t)eh.e_phoff) == (ssize_t)len && take_loads(m, &eh, ph);
	}
	close(fd);
	return ok;
}

int ember__tmod_layout(ember__tmods *r, ember__tmod *m)
{
	if (!m->layout) {
		m->layout = read_layout(m) ? 1 : -1;
		r->st.layout_failures += m->layout < 0;
	}
	return m->layout > 0;
}

int ember__tmod_bias(ember__tmods *r, ember__tmod *m, uint64_t start, uint64_t pgoff,
		     uint64_t *bias, uint64_t *lo, uint64_t *hi)
{
	if (!ember__tmod_layout(r, m))
		return 0;
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	int found = 0;
	uint64_t b = 0;
	/* The segment whose file bytes hold pgoff: the mapping's first byte
	 * is that offset, at vaddr - offset + pgoff. The vDSO's mapping
	 * starts at its image's first byte. */
	for (uint32_t i = 0; i < m->nloads && !found; i++) {
		uint64_t off0 = m->loads[i].offset & ~(page - 1);
		if (m->vdso || (pgoff >= off0 && pgoff < m->loads[i].offset + m->loads[i].filesz)) {
			b = start - (m->loads[i].vaddr - m->loads[i].offset + (m->vdso ? m->loads[i].offset : pgoff));
			found = 1;
		}
	}
	if (!found)
		return 0;
	uint64_t l = UINT64_MAX, h = 0;
	for (uint32_t i = 0; i < m->nloads; i++) {
		uint64_t s = m->loads[i].vaddr & ~(page - 1), e = m->loads[i].vaddr + m->loads[i].memsz;
		l = s < l ? s : l;
		h = e > h ? e : h;
	}
	*bias = b;
	if (lo)
		*lo = l + b;
	if (hi)
		*hi = h + b;
	return 1;
}

static uint64_t thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const ember__cfi_table *ember__tmod_table(ember__tmods *r, ember__tmod *m)
{
	if (m->table_state)
		return m->table;
	if (r->budget && ember__tmod_layout(r, m)) {
		/* 3 us an FDE until 2,000 were built, then the measured speed */
		double per_fde = r->built_fdes >= 2000 ? (double)r->built_ns / (double)r->built_fdes
						      : 3000.0;
		uint64_t est = (uint64_t)(per_fde * (double)m->fdes);
		if (est > (uint64_t)EMBER_UNWIND_SMALL_BUILD_NS &&
		    r->st.build_ns + est > r->cpu_ns / 100 * EMBER_UNWIND_BUILD_BUDGET_PCT) {
			r->st.deferred++;
			return NULL;
		}
	}
	uint64_t t0 = thread_ns();
	ember__cfi_module_info info;
	int rc;
	if (m->vdso) {
		size_t size;
		const void *img = ember__vdso_image(&size);
		/* rows at link-time addresses, as for a file: where our own
		 * image lies does not matter */
		ember__cfi_module_src src = {
			.image = img, .image_size = size,
			.map_start = (uint64_t)(uintptr_t)img, .map_end = (uint64_t)(uintptr_t)img + size};
		rc = img ? ember__cfi_build_module(&src, &m->table, &info)
			 : ember__error(EMBER_ERR_UNSUPPORTED, "no vDSO in this process");
	} else {
		rc = ember__cfi_build_file(m->path, &m->table, &info);
	}
	m->build_ns = thread_ns() - t0;
	r->st.build_ns += m->build_ns;
	if (rc) {
		m->table = NULL;
		m->table_state = -1;
		r->gen++;
		r->st.table_failures++;
		return NULL;
	}
	m->table_state = 1;
	r->gen++;
	r->built_ns += m->build_ns;
	r->built_fdes += m->fdes;
	r->st.tables++;
	r->st.rows += m->table->nrows;
	r->st.bytes += m->table->bytes;
	return m->table;
}

void ember__tmods_get_stats(const ember__tmods *r, ember__tmods_stats *out)
{
	*out = r->st;
}

uint64_t ember__tmods_generation(const ember__tmods *r)
{
	return r->gen;
}
