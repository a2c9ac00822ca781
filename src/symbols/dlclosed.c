/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlclosed.c - the journal of dlclose'd libraries (dlclosed.h).
 *
 * The ring: `w` counts records claimed by writers, `r` records taken by
 * the reader. A writer claims index w with a compare-and-swap while
 * w - r < SLOTS (else it drops its record), copies its record into slot
 * w % SLOTS and publishes it by storing w + 1 into the slot's `seq`
 * (release). The reader takes index r once its slot's seq is r + 1
 * (acquire), copies it out, then advances r (release): a writer can reuse
 * the slot only after that, so no record is read while overwritten.
 */
#include "symbols/dlclosed.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

struct slot {
	_Atomic uint64_t seq; /* index + 1 once the record of that index is in */
	ember__dlclosed_rec rec;
};

static struct {
	_Atomic pid_t owner; /* the process whose agent records; 0: none */
	_Atomic uint64_t w, r;
	_Atomic uint64_t recorded, dropped, skipped;
	struct slot slots[EMBER_DLCLOSED_SLOTS];
} J;

void ember__dlclosed_enable(void)
{
	/* Emptied first, while no writer of this process records (a fork
	 * child's owner is still its parent); then on. */
	atomic_store_explicit(&J.r, atomic_load(&J.w), memory_order_release);
	atomic_store_explicit(&J.owner, getpid(), memory_order_release);
}

void ember__dlclosed_disable(void)
{
	atomic_store_explicit(&J.owner, 0, memory_order_release);
}

int ember__dlclosed_wanted(void)
{
	pid_t o = atomic_load_explicit(&J.owner, memory_order_acquire);
	return o != 0 && o == getpid();
}

struct find {
	uintptr_t base;
	const char *name;
	ember__dlclosed_rec *rec;
	int found, bad;
};

/* The build id in a PT_NOTE segment of the object (mapped: it is loaded). */
static void note_build_id(const ElfW(Phdr) *ph, uintptr_t base, ember__dlclosed_rec *rec)
{
	size_t align = ph->p_align == 8 ? 8 : 4;
	const char *p = (const char *)(base + ph->p_vaddr), *end = p + ph->p_filesz;
	while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
		const ElfW(Nhdr) *nh = (const void *)p;
		const char *name = p + sizeof(*nh);
		size_t namesz = (nh->n_namesz + align - 1) & ~(align - 1);
		size_t descsz = (nh->n_descsz + align - 1) & ~(align - 1);
		if (namesz > (size_t)(end - name) || nh->n_descsz > (size_t)(end - name) - namesz)
			return;
		const char *desc = name + namesz;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
		    nh->n_descsz > 0 && nh->n_descsz <= EMBER_DLCLOSED_ID) {
			memcpy(rec->build_id, desc, nh->n_descsz);
			rec->build_id_len = nh->n_descsz;
			return;
		}
		if (descsz > (size_t)(end - desc))
			return;
		p = desc + descsz;
	}
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct find *f = data;
	if (info->dlpi_addr != f->base || !info->dlpi_name ||
	    (info->dlpi_name != f->name && strcmp(info->dlpi_name, f->name) != 0))
		return 0;
	f->found = 1;
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_NOTE && !f->rec->build_id_len)
			note_build_id(ph, info->dlpi_addr, f->rec);
		if (ph->p_type != PT_LOAD)
			continue;
		if (f->rec->nsegs == EMBER_DLCLOSED_SEGS) {
			f->bad = 1;
			break;
		}
		f->rec->segs[f->rec->nsegs++] = (ember__dlclosed_seg){
			ph->p_vaddr, ph->p_memsz, ph->p_offset, ph->p_align, ph->p_flags};
	}
	return 1;
}

int ember__dlclosed_capture(void *handle, ember__dlclosed_rec *out)
{
	struct link_map *lm = NULL;
	out->base = 0;
	out->nsegs = 0;
	out->build_id_len = 0;
	out->path[0] = '\0';
	if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name ||
	    !lm->l_name[0])
		return -1; /* not an object we could name (the main program: "") */
	const char *name = lm->l_name;
	size_t len = strlen(name), at = 0;
	if (name[0] != '/') {
		/* dlopen("./x.so") keeps the name as given: the cwd now */
		if (!getcwd(out->path, EMBER_DLCLOSED_PATH))
			return -1;
		at = strlen(out->path);
		if (at + 1 < EMBER_DLCLOSED_PATH && (at == 0 || out->path[at - 1] != '/'))
			out->path[at++] = '/';
	}
	if (at + len >= EMBER_DLCLOSED_PATH)
		return -1;
	memcpy(out->path + at, name, len + 1);
	struct find f = {(uintptr_t)lm->l_addr, name, out, 0, 0};
	dl_iterate_phdr(phdr_cb, &f);
	if (!f.found || f.bad || out->nsegs == 0)
		return -1;
	out->base = (uint64_t)lm->l_addr;
	return 0;
}

int ember__dlclosed_push(const ember__dlclosed_rec *rec)
{
	uint64_t w = atomic_load_explicit(&J.w, memory_order_relaxed);
	for (;;) {
		if (w - atomic_load_explicit(&J.r, memory_order_acquire) >= EMBER_DLCLOSED_SLOTS) {
			atomic_fetch_add_explicit(&J.dropped, 1, memory_order_relaxed);
			return -1;
		}
		if (atomic_compare_exchange_weak_explicit(&J.w, &w, w + 1, memory_order_acq_rel,
							  memory_order_relaxed))
			break;
	}
	struct slot *s = &J.slots[w % EMBER_DLCLOSED_SLOTS];
	/* only what is filled in: the path up to its end */
	size_t plen = strnlen(rec->path, EMBER_DLCLOSED_PATH - 1);
	memcpy(&s->rec, rec, offsetof(ember__dlclosed_rec, path));
	memcpy(s->rec.path, rec->path, plen);
	s->rec.path[plen] = '\0';
	atomic_store_explicit(&s->seq, w + 1, memory_order_release);
	atomic_fetch_add_explicit(&J.recorded, 1, memory_order_relaxed);
	return 0;
}

void ember__dlclosed_note(void *handle)
{
	if (!ember__dlclosed_wanted())
		return;
	ember__dlclosed_rec rec; /* 1.5 KiB of the caller's stack */
	if (ember__dlclosed_capture(handle, &rec) != 0) {
		/* a handle of the main program (dlopen(NULL)) is not a library
		 * that could go: not counted */
		struct link_map *lm = NULL;
		if (handle && dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name &&
		    lm->l_name[0])
			atomic_fetch_add_explicit(&J.skipped, 1, memory_order_relaxed);
		return;
	}
	(void)ember__dlclosed_push(&rec);
}

size_t ember__dlclosed_take(ember__dlclosed_rec *out, size_t max)
{
	size_t n = 0;
	uint64_t r = atomic_load_explicit(&J.r, memory_order_relaxed);
	while (n < max && r != atomic_load_explicit(&J.w, memory_order_acquire)) {
		struct slot *s = &J.slots[r % EMBER_DLCLOSED_SLOTS];
		if (atomic_load_explicit(&s->seq, memory_order_acquire) != r + 1)
			break; /* still being written: taken next time */
		out[n++] = s->rec;
		r++;
		atomic_store_explicit(&J.r, r, memory_order_release);
	}
	return n;
}

int ember__dlclosed_pending(void)
{
	return atomic_load_explicit(&J.r, memory_order_acquire) !=
	       atomic_load_explicit(&J.w, memory_order_acquire);
}

void ember__dlclosed_stats_get(ember__dlclosed_stats *out)
{
	out->recorded = atomic_load(&J.recorded);
	out->dropped = atomic_load(&J.dropped);
	out->skipped = atomic_load(&J.skipped);
}
