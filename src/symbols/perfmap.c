/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perfmap.c - parsing perf maps (/tmp/perf-PID.map) and looking up their
 * JIT symbols; see perfmap.h for the format.
 */
#include "symbols/perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "emberprof.h"
#include "util/error.h"

/* How many entries before the candidate a lookup examines for an older,
 * longer range that still holds the address. */
#define OVERLAP_LOOKBACK 64

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Reads a hex number at *p (optional 0x) into *out; at most 16 digits.
 * Returns 0, or -1 when there is none or it overflows. */
static int hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && hexval(s[2]) >= 0)
		s += 2;
	uint64_t v = 0;
	int digits = 0;
	for (; s < end && hexval(*s) >= 0; s++) {
		if (++digits > 16)
			return -1;
		v = v << 4 | (uint64_t)hexval(*s);
	}
	if (!digits)
		return -1;
	*out = v;
	*p = s;
	return 0;
}

/* One line without its newline. Returns 0, 1 if malformed, <0 on OOM. */
static int parse_line(ember__perfmap *m, const char *s, const char *end)
{
	if (end > s && end[-1] == '\r')
		end--;
	uint64_t start, size;
	if (hex(&s, end, &start) != 0 || s >= end || (*s != ' ' && *s != '\t'))
		return 1;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (hex(&s, end, &size) != 0 || s >= end || (*s != ' ' && *s != '\t'))
		return 1;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s >= end || size == 0 || start + size < start || memchr(s, '\0', (size_t)(end - s)))
		return 1;
	if (m->n >= EMBER_PERFMAP_MAX_ENTRIES) {
		m->dropped++;
		return 0;
	}
	if (m->n == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 256;
		ember__perfmap_entry *nv = realloc(m->v, ncap * sizeof(*nv));
		if (!nv)
			return ember__error_oom("perf map");
		m->v = nv;
		m->cap = ncap;
	}
	const char *name = ember__arena_strndup(&m->names, s, (size_t)(end - s));
	if (!name)
		return ember__error_oom("perf map names");
	m->v[m->n++] = (ember__perfmap_entry){start, start + size, m->seq++, name};
	m->sorted = 0;
	return 0;
}

size_t ember__perfmap_parse(ember__perfmap *m, const char *data, size_t len, int *err)
{
	size_t used = 0;
	*err = 0;
	while (used < len) {
		const char *s = data + used;
		size_t left = len - used;
		const char *nl = memchr(s, '\n', left < EMBER_PERFMAP_MAX_LINE + 1 ? left
										  : EMBER_PERFMAP_MAX_LINE + 1);
		if (!nl) {
			if (left <= EMBER_PERFMAP_MAX_LINE)
				break; /* an incomplete line: the rest comes later */
			m->bad_lines++; /* too long: skip up to the next newline */
			const char *next = memchr(s, '\n', left);
			used = next ? (size_t)(next - data) + 1 : len;
			continue;
		}
		int rc = nl > s ? parse_line(m, s, nl) : 0; /* an empty line is nothing */
		if (rc < 0) {
			*err = rc;
			break;
		}
		m->bad_lines += (uint64_t)rc;
		used = (size_t)(nl - data) + 1;
	}
	return used;
}

static int cmp_entry(const void *a, const void *b)
{
	const ember__perfmap_entry *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const char *ember__perfmap_find(ember__perfmap *m, uint64_t addr)
{
	if (!m->n)
		return NULL;
	if (!m->sorted) {
		qsort(m->v, m->n, sizeof(*m->v), cmp_entry);
		m->sorted = 1;
	}
	size_t lo = 0, hi = m->n; /* first entry starting after addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	const ember__perfmap_entry *best = NULL;
	for (size_t j = lo; j-- > 0 && lo - j <= OVERLAP_LOOKBACK;) {
		const ember__perfmap_entry *e = &m->v[j];
		if (addr < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	return best ? best->name : NULL;
}

void ember__perfmap_reset(ember__perfmap *m)
{
	free(m->v);
	ember__arena_release(&m->names);
	*m = (ember__perfmap)EMBER_PERFMAP_INIT;
}

/* ---------------------------------------------------------------------- */
/* The file                                                                */

#define CHUNK ((size_t)1 << 20)

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ember__perfmap_file_reset(ember__perfmap_file *f)
{
	ember__perfmap_reset(&f->map);
	*f = (ember__perfmap_file)EMBER_PERFMAP_FILE_INIT;
}

/* Forgets what was read (a new file, or a new process), keeping the
 * counters of malformed and dropped lines. */
static void start_over(ember__perfmap_file *f)
{
	uint64_t bad = f->map.bad_lines, dropped = f->map.dropped;
	ember__perfmap_reset(&f->map);
	f->map.bad_lines = bad;
	f->map.dropped = dropped;
	f->off = 0;
	f->capped = 0;
	f->found = 0;
}

int ember__perfmap_file_update(ember__perfmap_file *f, int64_t interval_ns)
{
	int64_t now = mono_ns();
	if (f->checked_ns && now - f->checked_ns < interval_ns)
		return 0;
	f->checked_ns = now;
	pid_t pid = f->target ? f->target : getpid();
	if (pid != f->pid) {
		start_over(f);
		f->pid = pid;
		snprintf(f->path, sizeof(f->path), "/tmp/perf-%d.map", (int)pid);
	}
	int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return 0; /* none (yet): nothing to name */
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != geteuid() && st.st_uid != 0)) {
		f->refused++;
		close(fd);
		return 0;
	}
	if ((uint64_t)st.st_dev != f->dev || (uint64_t)st.st_ino != f->ino ||
	    (uint64_t)st.st_size < f->off) {
		start_over(f); /* another file, or rewritten */
		f->dev = (uint64_t)st.st_dev;
		f->ino = (uint64_t)st.st_ino;
	}
	f->found = 1;
	int err = 0;
	char *buf = NULL;
	while (!f->capped && f->off < (uint64_t)st.st_size) {
		if (f->off >= EMBER_PERFMAP_MAX_BYTES) {
			f->capped = 1;
			break;
		}
		if (!buf && !(buf = malloc(CHUNK))) {
			err = ember__error_oom("perf map buffer");
			break;
		}
		ssize_t got = pread(fd, buf, CHUNK, (off_t)f->off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		int perr;
		size_t used = ember__perfmap_parse(&f->map, buf, (size_t)got, &perr);
		f->off += used;
		if (perr) {
			err = perr;
			break;
		}
		if (used == 0)
			break; /* an incomplete last line: read it next time */
	}
	free(buf);
	close(fd);
	return err;
}
