/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procmaps.c - parsing /proc/<pid>/maps.
 *
 * Each line is "start-end perms offset major:minor inode [path]", with the
 * numbers in hex except the inode, which is decimal. The kernel pads the
 * inode column with spaces before the path; everything after that padding,
 * to the end of the line, is the path (spaces included). Lines are parsed
 * by hand rather than with sscanf so that every field is checked and a bad
 * line can be reported precisely.
 */
#include "symbols/procmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emberprof.h"
#include "util/error.h"

#define DELETED_SUFFIX " (deleted)"

/* Parses hex digits at *p (at least one, at most 16) up to `end`. */
static int parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;
	for (; s < end; s++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (++digits > 16)
			return -1;
		v = v << 4 | d;
	}
	if (digits == 0)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

/* Parses decimal digits at *p (at least one, no overflow) up to `end`. */
static int parse_dec(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;
	for (; s < end && *s >= '0' && *s <= '9'; s++, digits++) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (digits == 0)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

/* Consumes the single character c at *p. */
static int expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -1;
	(*p)++;
	return 0;
}

static int parse_perms(const char **p, const char *end, unsigned *perms)
{
	static const char want[3] = {'r', 'w', 'x'};
	const char *s = *p;
	unsigned v = 0;
	if (end - s < 4)
		return -1;
	for (int i = 0; i < 3; i++) {
		if (s[i] == want[i])
			v |= 1u << i;
		else if (s[i] != '-')
			return -1;
	}
	if (s[3] == 'p')
		v |= EMBER_MAP_PRIVATE;
	else if (s[3] != 's')
		return -1;
	*perms = v;
	*p = s + 4;
	return 0;
}

static int bad_line(size_t lineno, const char *what, const char *line, size_t len)
{
	int shown = len > 160 ? 160 : (int)len;
	return ember__error(EMBER_ERR_FORMAT, "maps line %zu: %s: \"%.*s%s\"", lineno, what,
			    shown, line, len > 160 ? "..." : "");
}

/*
 * Parses one line (without its newline) into *m; the path is copied into
 * the arena. Returns 0 or an error naming the line.
 */
static int parse_line(const char *line, size_t len, size_t lineno, ember__arena *arena,
		      ember__procmap *m)
{
	const char *p = line, *end = line + len;
	uint64_t major, minor;

	if (parse_hex(&p, end, &m->start) || expect(&p, end, '-'))
		return bad_line(lineno, "bad start address", line, len);
	if (parse_hex(&p, end, &m->end) || expect(&p, end, ' '))
		return bad_line(lineno, "bad end address", line, len);
	if (m->end <= m->start)
		return bad_line(lineno, "empty or inverted address range", line, len);
	if (parse_perms(&p, end, &m->perms) || expect(&p, end, ' '))
		return bad_line(lineno, "bad permissions", line, len);
	if (parse_hex(&p, end, &m->offset) || expect(&p, end, ' '))
		return bad_line(lineno, "bad offset", line, len);
	if (parse_hex(&p, end, &major) || expect(&p, end, ':') || parse_hex(&p, end, &minor) ||
	    expect(&p, end, ' ') || major > UINT32_MAX || minor > UINT32_MAX)
		return bad_line(lineno, "bad device", line, len);
	m->dev_major = (uint32_t)major;
	m->dev_minor = (uint32_t)minor;
	if (parse_dec(&p, end, &m->inode))
		return bad_line(lineno, "bad inode", line, len);
	if (p < end && *p != ' ' && *p != '\t')
		return bad_line(lineno, "junk after inode", line, len);
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;

	size_t plen = (size_t)(end - p);
	size_t slen = sizeof(DELETED_SUFFIX) - 1;
	m->deleted = plen > slen && memcmp(end - slen, DELETED_SUFFIX, slen) == 0;
	m->path = ember__arena_strndup(arena, p, plen);
	if (!m->path)
		return ember__error_oom("maps path");
	return 0;
}

static int cmp_start(const void *a, const void *b)
{
	const ember__procmap *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * `live`: the text is the kernel's, read while the process may map and
 * unmap (see ember__procmaps_parse_live). 0: strict. `overlap` (may be
 * NULL) is set when the strict parse failed on an overlap only.
 */
static int parse_maps(const char *text, size_t len, ember__procmaps *out, int live, int *overlap)
{
	if (overlap)
		*overlap = 0;
	if (!text || !out)
		return ember__error(EMBER_ERR_INVALID, "procmaps_parse: NULL argument");
	out->maps = NULL;
	out->n = 0;
	out->arena = (ember__arena)EMBER_ARENA_INIT;

	size_t nlines = 1;
	for (size_t i = 0; i < len; i++)
		nlines += text[i] == '\n';
	ember__procmap *maps = ember__arena_alloc(&out->arena, nlines * sizeof(*maps));
	if (!maps)
		return ember__error_oom("maps table");

	size_t n = 0, lineno = 0;
	int sorted = 1, err = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		size_t llen = (size_t)(eol - p);
		lineno++;
		if (llen > 0 && p[llen - 1] == '\r')
			llen--;
		if (llen > 0) {
			if (memchr(p, '\0', llen)) {
				err = bad_line(lineno, "NUL byte in line", p, strnlen(p, llen));
				goto fail;
			}
			err = parse_line(p, llen, lineno, &out->arena, &maps[n]);
			if (err)
				goto fail;
			if (n > 0 && maps[n].start < maps[n - 1].start)
				sorted = 0;
			n++;
		}
		p = nl ? nl + 1 : end;
	}

	if (live) {
		/* A torn read: each read() resumes at the first mapping that ends
		 * past the last one printed, so a line that starts before the end
		 * of earlier ones reaches past them and is the newer state. The
		 * earlier ones keep what it does not cover, or go. */
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			while (k > 0 && maps[i].start < maps[k - 1].end &&
			       maps[i].end > maps[k - 1].start) {
				if (maps[k - 1].start < maps[i].start) {
					maps[k - 1].end = maps[i].start;
					break;
				}
				k--; /* wholly covered by the newer line */
			}
			maps[k++] = maps[i];
		}
		n = k;
		sorted = 1;
		for (size_t i = 1; i < n; i++)
			sorted &= maps[i].start >= maps[i - 1].start;
	}
	/* The kernel prints mappings in address order; accept other orders from
	 * files but never overlapping ranges, which lookups could not honour. */
	if (!sorted)
		qsort(maps, n, sizeof(*maps), cmp_start);
	for (size_t i = 1; i < n; i++) {
		if (maps[i].start < maps[i - 1].end) {
			if (overlap)
				*overlap = 1;
			err = ember__error(EMBER_ERR_FORMAT,
					   "maps: mapping %" PRIx64 "-%" PRIx64
					   " overlaps %" PRIx64 "-%" PRIx64,
					   maps[i].start, maps[i].end, maps[i - 1].start,
					   maps[i - 1].end);
			goto fail;
		}
	}
	out->maps = maps;
	out->n = n;
	return 0;
fail:
	ember__procmaps_free(out);
	return err;
}

int ember__procmaps_parse(const char *text, size_t len, ember__procmaps *out)
{
	return parse_maps(text, len, out, 0, NULL);
}

int ember__procmaps_parse_live(const char *text, size_t len, ember__procmaps *out)
{
	return parse_maps(text, len, out, 1, NULL);
}

int ember__procmaps_slurp(const char *path, char **text, size_t *len)
{
	if (!path || !text || !len)
		return ember__error(EMBER_ERR_INVALID, "procmaps_slurp: NULL argument");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot open %s", path);

	/* /proc files report size 0, so read until EOF, doubling the buffer. */
	size_t cap = 16384, n = 0;
	char *buf = malloc(cap);
	if (!buf) {
		close(fd);
		return ember__error_oom("maps buffer");
	}
	for (;;) {
		if (cap - n < 4097) {
			char *nbuf = realloc(buf, cap * 2);
			if (!nbuf) {
				free(buf);
				close(fd);
				return ember__error_oom("maps buffer");
			}
			buf = nbuf;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			close(fd);
			return ember__error_errno(EMBER_ERR_IO, e, "cannot read %s", path);
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

int ember__procmaps_read_file(const char *path, ember__procmaps *out)
{
	char *text = NULL; /* set when slurp succeeds; gcc -O3 cannot tell */
	size_t len = 0;
	int err = ember__procmaps_slurp(path, &text, &len);
	if (err)
		return err;
	err = ember__procmaps_parse(text, len, out);
	free(text);
	return err;
}

/* Reads taken before the torn one is repaired (see procmaps.h). */
#define LIVE_TRIES 4

int ember__procmaps_read_self(ember__procmaps *out)
{
	for (int i = 0;; i++) {
		char *text = NULL;
		size_t len = 0;
		int err = ember__procmaps_slurp("/proc/self/maps", &text, &len);
		if (err)
			return err;
		int overlap = 0;
		err = i + 1 < LIVE_TRIES ? parse_maps(text, len, out, 0, &overlap)
					 : parse_maps(text, len, out, 1, NULL);
		free(text);
		if (!overlap)
			return err;
	}
}

int ember__procmaps_copy(ember__procmaps *dst, const ember__procmaps *src)
{
	ember__procmaps c = EMBER_PROCMAPS_INIT;
	c.maps = ember__arena_alloc(&c.arena, (src->n ? src->n : 1) * sizeof(*c.maps));
	if (!c.maps)
		goto oom;
	for (size_t i = 0; i < src->n; i++) {
		c.maps[i] = src->maps[i];
		c.maps[i].path = ember__arena_strdup(&c.arena, src->maps[i].path);
		if (!c.maps[i].path)
			goto oom;
	}
	c.n = src->n;
	*dst = c;
	return 0;
oom:
	ember__arena_release(&c.arena);
	*dst = (ember__procmaps)EMBER_PROCMAPS_INIT;
	return ember__error_oom("copy of a process's mappings");
}

void ember__procmaps_free(ember__procmaps *m)
{
	if (!m)
		return;
	ember__arena_release(&m->arena);
	m->maps = NULL;
	m->n = 0;
}

const ember__procmap *ember__procmaps_find(const ember__procmaps *m, uint64_t addr)
{
	if (!m)
		return NULL;
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addr < m->maps[mid].start)
			hi = mid;
		else if (addr >= m->maps[mid].end)
			lo = mid + 1;
		else
			return &m->maps[mid];
	}
	return NULL;
}

int ember__procmaps_self_find(uint64_t addr, ember__procmap *out, char *path_buf,
			      size_t path_buf_len)
{
	if (!out || (!path_buf && path_buf_len))
		return ember__error(EMBER_ERR_INVALID, "procmaps_self_find: NULL argument");
	ember__procmaps maps = EMBER_PROCMAPS_INIT;
	int err = ember__procmaps_read_self(&maps);
	if (err)
		return err;
	const ember__procmap *m = ember__procmaps_find(&maps, addr);
	if (!m) {
		ember__procmaps_free(&maps);
		return ember__error(EMBER_ERR_INVALID, "no mapping contains address 0x%" PRIx64,
				    addr);
	}
	*out = *m;
	if (path_buf_len) {
		size_t plen = strlen(m->path);
		if (plen >= path_buf_len)
			plen = path_buf_len - 1;
		memcpy(path_buf, m->path, plen);
		path_buf[plen] = '\0';
		out->path = path_buf;
	} else {
		out->path = "";
	}
	ember__procmaps_free(&maps);
	return 0;
}
