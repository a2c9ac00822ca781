/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spool.c - the upload pipeline's spool directory (see spool.h for the
 * layout, the locking and the size bound).
 *
 * The file header is written field by field in big-endian order, so a
 * spool written on one machine reads the same on any other:
 *
 *     "EMBSPOOL"  8 bytes magic
 *     u32 version (1), u32 kind, u32 seq
 *     i64 start_ns, i64 end_ns
 *     u32 meta_len, u64 body_len
 *     u32 crc32(meta || body)
 *     meta bytes, body bytes
 */
#include "upload/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/dep_zlib.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/ownfd.h"

#define MAGIC "EMBSPOOL"
#define VERSION 1u
#define HEADER_LEN (8 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 4)
#define NAME_LEN 96
#define TMP_PREFIX ".tmp-"
#define MAX_META (64u * 1024)

typedef struct spool_file {
	char name[NAME_LEN];
	uint64_t size;
} spool_file;

struct ember__spool {
	char *dir;
	int dirfd;          /* = dfd.fd, checked by spool_check() before use */
	ember__ownfd dfd;
	ember__ownfd lock;  /* ".lock", flock'ed */
	uint64_t reopens;   /* descriptors the program took from us */
	uint64_t max_bytes;
	spool_file *files; /* sorted by name: oldest first */
	size_t n, cap;
	uint64_t bytes;
	unsigned counter;  /* makes names unique within the process */
};

/* ---- big-endian fields ---- */

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--)
		*p++ = (uint8_t)(v >> (i * 8));
	return p;
}

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--)
		*p++ = (uint8_t)(v >> (i * 8));
	return p;
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_u64(const uint8_t *p)
{
	return (uint64_t)get_u32(p) << 32 | get_u32(p + 4);
}

/* ---- the index ---- */

static int is_spool_name(const char *name)
{
	size_t n = strlen(name), sl = strlen(EMBER_SPOOL_SUFFIX);
	return name[0] != '.' && n > sl && n < NAME_LEN &&
	       !strcmp(name + n - sl, EMBER_SPOOL_SUFFIX);
}

static int index_insert(ember__spool *s, const char *name, uint64_t size)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		spool_file *f = realloc(s->files, cap * sizeof(*f));
		if (!f)
			return ember__error_oom("spool index");
		s->files = f;
		s->cap = cap;
	}
	size_t i = s->n;
	while (i > 0 && strcmp(s->files[i - 1].name, name) > 0)
		i--;
	memmove(&s->files[i + 1], &s->files[i], (s->n - i) * sizeof(*s->files));
	snprintf(s->files[i].name, NAME_LEN, "%s", name);
	s->files[i].size = size;
	s->n++;
	s->bytes += size;
	return 0;
}

static void index_remove_at(ember__spool *s, size_t i)
{
	s->bytes -= s->files[i].size;
	memmove(&s->files[i], &s->files[i + 1], (s->n - i - 1) * sizeof(*s->files));
	s->n--;
}

static int scan(ember__spool *s)
{
	int fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot list spool directory '%s'", s->dir);
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		return ember__error_errno(EMBER_ERR_IO, e, "cannot list spool directory '%s'", s->dir);
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		if (!strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			/* Left by a run that died mid-write; we hold the lock. */
			unlinkat(s->dirfd, de->d_name, 0);
			continue;
		}
		if (!is_spool_name(de->d_name))
			continue;
		struct stat st;
		if (fstatat(s->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		rc = index_insert(s, de->d_name, (uint64_t)st.st_size);
	}
	closedir(d);
	return rc;
}

/* ---- open / close ---- */

static int open_locked(ember__spool *s);

int ember__spool_open(ember__spool **out, const char *dir, uint64_t max_bytes)
{
	*out = NULL;
	if (max_bytes == 0)
		return ember__error(EMBER_ERR_INVALID, "spool size limit must be positive");
	int lrc = ember__lazydep_load(&ember__zlib); /* every entry has a CRC-32 */
	if (lrc < 0)
		return lrc;
	ember__spool *s = calloc(1, sizeof(*s));
	if (!s)
		return ember__error_oom("spool");
	s->dfd.fd = s->lock.fd = s->dirfd = -1;
	s->max_bytes = max_bytes;
	s->dir = strdup(dir ? dir : "");
	if (!s->dir) {
		free(s);
		return ember__error_oom("spool directory");
	}
	int rc = open_locked(s);
	if (rc < 0 || (rc = scan(s)) < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	ember__spool_close(s);
	return rc;
}

/* Opens the directory, owned (placed high, checked before use: ownfd.h). */
static int open_dir(ember__spool *s)
{
	int rc = ember__local_open_dir(s->dir);
	if (rc < 0)
		return rc;
	if (ember__ownfd_adopt(&s->dfd, rc) < 0)
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot open spool directory '%s'",
					  s->dir);
	s->dirfd = s->dfd.fd;
	return 0;
}

/* Opens ".lock" in the directory, owned, and takes the lock. */
static int take_lock(ember__spool *s)
{
	int fd = openat(s->dirfd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || ember__ownfd_adopt(&s->lock, fd) < 0)
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot create the lock file in spool "
					  "directory '%s'", s->dir);
	if (flock(s->lock.fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return ember__error(EMBER_ERR_BUSY, "spool directory '%s' is in use by another "
					    "process", s->dir);
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot lock spool directory '%s'",
					  s->dir);
	}
	return 0;
}

static int open_locked(ember__spool *s)
{
	int rc = open_dir(s);
	return rc < 0 ? rc : take_lock(s);
}

/*
 * Before each use: if the program closed or reused our directory or lock
 * descriptor (a daemon closing every descriptor), leave its numbers alone,
 * reopen by path what was lost - counted. Closing the lock descriptor
 * released the lock: if another process took the spool meanwhile, we
 * cannot use it any more (EMBER_ERR_BUSY).
 */
static int spool_check(ember__spool *s)
{
	int had_dir = s->dfd.fd >= 0, had_lock = s->lock.fd >= 0; /* -1: a reopen failed */
	int dir_ok = ember__ownfd_check(&s->dfd), lock_ok = ember__ownfd_check(&s->lock);
	if (dir_ok && lock_ok)
		return 0;
	s->reopens += (unsigned)(had_dir && !dir_ok) + (unsigned)(had_lock && !lock_ok);
	int rc = dir_ok ? 0 : open_dir(s);
	if (rc == 0 && !lock_ok)
		rc = take_lock(s);
	if (rc < 0) {
		ember__ownfd_close(&s->dfd);
		ember__ownfd_close(&s->lock);
		s->dirfd = -1;
		return ember__error(rc, "the program closed the spool's descriptors and they cannot be "
				    "reopened: %s", ember_last_error());
	}
	return 0;
}

void ember__spool_close(ember__spool *s)
{
	if (!s)
		return;
	ember__ownfd_close(&s->lock); /* releases the flock */
	ember__ownfd_close(&s->dfd);
	free(s->files);
	free(s->dir);
	free(s);
}

size_t ember__spool_count(const ember__spool *s)
{
	return s->n;
}

uint64_t ember__spool_bytes(const ember__spool *s)
{
	return s->bytes;
}

const char *ember__spool_dir(const ember__spool *s)
{
	return s->dir;
}

uint64_t ember__spool_reopens(const ember__spool *s)
{
	return s->reopens;
}

/* ---- writing ---- */

static uint32_t payload_crc(const char *meta, size_t mlen, const uint8_t *body, size_t blen)
{
	uLong c = crc32(0L, Z_NULL, 0);
	/* zlib takes uInt lengths: feed large bodies in slices. */
	const uint8_t *parts[2] = {(const uint8_t *)meta, body};
	size_t lens[2] = {mlen, blen};
	for (int k = 0; k < 2; k++)
		for (size_t off = 0; off < lens[k];) {
			size_t chunk = lens[k] - off > (1u << 30) ? (1u << 30) : lens[k] - off;
			c = crc32(c, parts[k] + off, (uInt)chunk);
			off += chunk;
		}
	return (uint32_t)c;
}

static void make_header(uint8_t *h, const ember__upload_item *it, size_t mlen)
{
	memcpy(h, MAGIC, 8);
	uint8_t *p = h + 8;
	p = put_u32(p, VERSION);
	p = put_u32(p, it->kind);
	p = put_u32(p, it->seq);
	p = put_u64(p, (uint64_t)it->start_ns);
	p = put_u64(p, (uint64_t)it->end_ns);
	p = put_u32(p, (uint32_t)mlen);
	p = put_u64(p, (uint64_t)it->len);
	put_u32(p, payload_crc(it->meta, mlen, it->body, it->len));
}

/* Removes oldest files (except `keep`) until `need` more bytes fit. */
static void make_room(ember__spool *s, uint64_t need, const char *keep, unsigned *evicted)
{
	size_t i = 0;
	while (s->bytes + need > s->max_bytes && i < s->n) {
		if (keep && !strcmp(s->files[i].name, keep)) {
			i++;
			continue;
		}
		unlinkat(s->dirfd, s->files[i].name, 0);
		index_remove_at(s, i);
		(*evicted)++;
	}
}

int ember__spool_put(ember__spool *s, const ember__upload_item *it, const char *keep,
		     unsigned *evicted)
{
	size_t mlen = strlen(it->meta);
	if (mlen > MAX_META)
		return ember__error(EMBER_ERR_INVALID, "spool: item metadata too long");
	uint64_t size = HEADER_LEN + mlen + (uint64_t)it->len;
	if (size > s->max_bytes)
		return ember__error(EMBER_ERR_INVALID, "spool: window %u (%llu bytes) is larger than "
				    "the spool limit (%llu bytes)", it->seq,
				    (unsigned long long)size, (unsigned long long)s->max_bytes);
	int rc = spool_check(s);
	if (rc < 0)
		return rc;
	make_room(s, size, keep, evicted);

	char name[NAME_LEN], tmp[64];
	long long start = it->start_ns < 0 ? 0 : (long long)it->start_ns;
	snprintf(name, sizeof(name), "%020lld-%010u-%ld-%010u" EMBER_SPOOL_SUFFIX, start, it->seq,
		 (long)getpid(), s->counter);
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%ld-%u", (long)getpid(), s->counter);
	s->counter++;
	/* above the program's numbers while it is written (local.c says why) */
	int fd = ember__ownfd_raise(
		openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
	if (fd < 0)
		return ember__error_errno(EMBER_ERR_IO, errno, "spool: cannot create a file in '%s'",
					  s->dir);
	uint8_t h[HEADER_LEN];
	make_header(h, it, mlen);
	int failed = ember__write_all(fd, h, sizeof(h)) < 0 ||
		     ember__write_all(fd, it->meta, mlen) < 0 ||
		     ember__write_all(fd, it->body, it->len) < 0 || fsync(fd) < 0;
	int e = errno;
	if (close(fd) < 0 && !failed) {
		failed = 1;
		e = errno;
	}
	if (!failed && renameat2(s->dirfd, tmp, s->dirfd, name, RENAME_NOREPLACE) < 0) {
		if (errno == EINVAL || errno == ENOSYS) {
			failed = linkat(s->dirfd, tmp, s->dirfd, name, 0) < 0;
			e = errno;
		} else {
			failed = 1;
			e = errno;
		}
	}
	unlinkat(s->dirfd, tmp, 0); /* after a rename there is nothing left to remove */
	if (failed)
		return ember__error_errno(EMBER_ERR_IO, e, "spool: cannot write '%s/%s'", s->dir, name);
	(void)fsync(s->dirfd);
	return index_insert(s, name, size);
}

/* ---- reading ---- */

static int read_all(int fd, void *buf, size_t n)
{
	uint8_t *p = buf;
	while (n > 0) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Drops a corrupt file and says why. */
static int corrupt(ember__spool *s, size_t idx, const char *why)
{
	char name[NAME_LEN];
	snprintf(name, sizeof(name), "%s", s->files[idx].name);
	unlinkat(s->dirfd, name, 0);
	index_remove_at(s, idx);
	return ember__error(EMBER_ERR_FORMAT, "spool file '%s/%s' is unusable (%s); removed", s->dir,
			    name, why);
}

int ember__spool_load_oldest(ember__spool *s, ember__upload_item **out)
{
	*out = NULL;
	if (s->n == 0)
		return 1;
	int rc = spool_check(s);
	if (rc < 0)
		return rc;
	const char *name = s->files[0].name;
	int fd = ember__ownfd_raise(openat(s->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
	if (fd < 0) {
		if (errno == ENOENT)
			return corrupt(s, 0, "it disappeared");
		return ember__error_errno(EMBER_ERR_IO, errno, "spool: cannot open '%s/%s'", s->dir,
					  name);
	}
	struct stat st;
	uint8_t h[HEADER_LEN];
	if (fstat(fd, &st) < 0 || read_all(fd, h, sizeof(h)) < 0) {
		close(fd);
		return corrupt(s, 0, "truncated header");
	}
	uint32_t mlen = get_u32(h + 36);
	uint64_t blen = get_u64(h + 40);
	if (memcmp(h, MAGIC, 8) || get_u32(h + 8) != VERSION || mlen > MAX_META ||
	    blen > (uint64_t)st.st_size || HEADER_LEN + mlen + blen != (uint64_t)st.st_size) {
		close(fd);
		return corrupt(s, 0, "bad header or size");
	}
	char *meta = malloc(mlen + 1);
	uint8_t *body = malloc(blen ? blen : 1);
	if (!meta || !body) {
		close(fd);
		free(meta);
		free(body);
		return ember__error_oom("spooled window");
	}
	int bad = read_all(fd, meta, mlen) < 0 || read_all(fd, body, blen) < 0;
	close(fd);
	meta[mlen] = '\0';
	if (bad || payload_crc(meta, mlen, body, blen) != get_u32(h + 48) || strlen(meta) != mlen) {
		free(meta);
		free(body);
		return corrupt(s, 0, "checksum mismatch");
	}
	ember__upload_item *it = ember__upload_item_new(get_u32(h + 12), get_u32(h + 16),
							(int64_t)get_u64(h + 20), (int64_t)get_u64(h + 28),
							meta, body, (size_t)blen);
	free(meta);
	if (!it)
		return EMBER_ERR_NOMEM;
	it->spool_name = strdup(name);
	if (!it->spool_name) {
		ember__upload_item_free(it);
		return ember__error_oom("spool file name");
	}
	*out = it;
	return 0;
}

void ember__spool_remove(ember__spool *s, const char *name)
{
	if (spool_check(s) < 0)
		return; /* the file stays; a later run sends it again */
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->files[i].name, name)) {
			unlinkat(s->dirfd, name, 0);
			index_remove_at(s, i);
			return;
		}
}
