/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kallsyms.c - /proc/kallsyms read once, sorted, looked up by address
 * (kallsyms.h).
 */
#include "symbols/kallsyms.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fileio.h"
#include "util/ownfd.h"

typedef struct ksym {
	uint64_t addr;
	uint32_t name; /* offset in names */
} ksym;

struct ember__kallsyms {
	ksym *syms;
	size_t nsyms;
	char *names;
	size_t names_len, names_cap;
	uint64_t lo, hi; /* the kernel text's range, for the mapping */
	char build_id[41];
	char why[160];
	int loaded;
};

static int cmp_ksym(const void *a, const void *b)
{
	const ksym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int add_name(ember__kallsyms *k, const char *s, uint32_t *off)
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
static void read_build_id(ember__kallsyms *k)
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

int ember__kallsyms_new(ember__kallsyms **out)
{
	ember__kallsyms *k = calloc(1, sizeof(*k));
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

static void load(ember__kallsyms *k)
{
	if (k->loaded)
		return;
	k->loaded = 1;
	/* Reading it takes a long while (megabytes the kernel makes as they
	 * are read): the descriptor stays out of the program's low numbers,
	 * which it may list, dup2 over or close meanwhile (util/ownfd.h;
	 * host.test_fds under load saw fd 4 here). */
	int fd = ember__ownfd_raise(open("/proc/kallsyms", O_RDONLY | O_CLOEXEC));
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
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
		int kr = ember__read_int_file("/proc/sys/kernel/kptr_restrict", -1);
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

void ember__kallsyms_free(ember__kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->names);
	free(k);
}

int ember__kallsyms_named(ember__kallsyms *k)
{
	load(k);
	return k->nsyms > 0;
}

const char *ember__kallsyms_why(ember__kallsyms *k)
{
	load(k);
	return k->why;
}

const char *ember__kallsyms_lookup(ember__kallsyms *k, uint64_t addr)
{
	load(k);
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

const char *ember__kallsyms_range(ember__kallsyms *k, uint64_t *lo, uint64_t *hi)
{
	load(k);
	*lo = k->lo;
	*hi = k->hi;
	return k->build_id;
}
