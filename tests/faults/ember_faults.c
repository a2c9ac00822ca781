/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember_faults.c - libember_faults.so, a test-only interposer (never
 * installed) that makes one call of the agent's own threads fail, as
 * curl's torture tests make each allocation fail in turn.
 *
 * Preloaded after libemberprof_noalloc.so (emberprof run puts its library
 * first; the noalloc variant defines no malloc, so every allocation of the
 * process reaches the definitions here). It wraps the allocation functions
 * (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign),
 * open/open64/openat/openat64/creat/fopen/fopen64, write/pwrite/pwrite64/
 * writev and mmap/mmap64.
 *
 * Only calls made on the agent's threads are ever touched: a thread is the
 * agent's once it names itself "emberprof..." (pthread_setname_np, also
 * wrapped; the agent's threads do it first thing). Those threads block
 * every signal, so nothing here runs in a signal handler; the program's
 * threads always go straight to the real function.
 *
 * A call is identified by its site: the wrapped function's name and the
 * innermost return address inside libemberprof*.so (module-relative, so
 * stable across runs and address-space layouts), whatever library lies in
 * between (libc's fopen, zlib, the loader). Environment:
 *
 *   EMBER_FAULTS_LOG=PATH   lines are appended here (opened by the
 *                           constructor, held at descriptor >= 900)
 *   EMBER_FAULTS_MODE=count one line "call FN SITE THREAD" per call of an
 *                           agent thread
 * *EMBER_FAULTS_DEPTH=N   agent frames in a site (default 2)
 *EMBER_FAULTS_MODE=fail  the first call of function EMBER_FAULTS_FN at
 *                           EMBER_FAULTS_SITE fails with its errno (ENOMEM
 *                           for allocations and mmap, ENOSPC for writes,
 *                           EMFILE for opens; EMBER_FAULTS_ERRNO=N
 *                           overrides); one line "injected FN SITE ERRNO
 *                           THREAD" says it happened, and a line
 *                           "stack MODULE+0xOFF..." where; if the
 *                           program then crashes (SIGSEGV, SIGBUS,
 *                           SIGABRT), "crash SIG MODULE+0xOFF...".
 *
 * The record is written with raw system calls, never through the wrappers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <unwind.h>

#define EXPORT __attribute__((visibility("default")))

/* glibc's allocator under its internal names: no dlsym (which may itself
 * allocate) on the allocation path. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

enum { MODE_OFF, MODE_COUNT, MODE_FAIL };

static int mode;
static int logfd = -1;
static const char *want_fn = "";
static const char *want_site = "";
static int want_errno;
static int depth = 2; /* agent frames in a site */
static int elf_depth;  /* elfutils frames in a site (EMBER_FAULTS_ELFUTILS) */
static atomic_int injected;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static __thread int agent_thread; /* this thread named itself emberprof* */
static __thread int busy;         /* inside a wrapper: nested calls pass */

static void on_crash(int sig);

static void init(void)
{
	const char *m = getenv("EMBER_FAULTS_MODE");
	const char *path = getenv("EMBER_FAULTS_LOG");
	if (!m || !path)
		return;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	/* Out of the way of a program that reuses low numbers. */
	int hi = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 900);
	if (hi >= 0) {
		syscall(SYS_close, fd);
		fd = hi;
	}
	logfd = fd;
	const char *d = getenv("EMBER_FAULTS_DEPTH");
	if (d && atoi(d) > 0)
		depth = atoi(d);
	const char *ed = getenv("EMBER_FAULTS_ELFUTILS");
	if (ed && atoi(ed) > 0)
		elf_depth = atoi(ed) < 8 ? atoi(ed) : 8;
	if (!strcmp(m, "count")) {
		mode = MODE_COUNT;
	} else if (!strcmp(m, "fail")) {
		const char *fn = getenv("EMBER_FAULTS_FN"), *site = getenv("EMBER_FAULTS_SITE");
		const char *e = getenv("EMBER_FAULTS_ERRNO");

		if (fn && site) {
			want_fn = fn;
			want_site = site;
			want_errno = e ? atoi(e) : 0;
			mode = MODE_FAIL;
			struct sigaction sa = { .sa_handler = on_crash, .sa_flags = SA_RESETHAND | SA_NODEFER };
			sigaction(SIGSEGV, &sa, NULL);
			sigaction(SIGBUS, &sa, NULL);
			sigaction(SIGABRT, &sa, NULL);
		}
	}
}

__attribute__((constructor(101))) static void faults_ctor(void)
{
	pthread_once(&once, init);
}

static void record(const char *line, size_t n)
{
	if (logfd >= 0)
		(void)syscall(SYS_write, logfd, line, n);
}

/* ---- where a call comes from ---- */

struct frames {
	uintptr_t ip[64];
	int n;
};

static _Unwind_Reason_Code collect(struct _Unwind_Context *ctx, void *arg)
{
	struct frames *f = arg;
	uintptr_t ip = _Unwind_GetIP(ctx);
	if (!ip)
		return _URC_END_OF_STACK;
	f->ip[f->n++] = ip;
	return f->n < (int)(sizeof(f->ip) / sizeof(f->ip[0])) ? _URC_NO_REASON : _URC_END_OF_STACK;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static int is_elfutils(const char *path)
{
	const char *b = base_name(path);
	return !strncmp(b, "libdw.so", 8) || !strncmp(b, "libdw-", 6) || !strncmp(b, "libelf.so", 9) ||
	       !strncmp(b, "libelf-", 7);
}

/* Appends "MODULE+0xOFF" (sep NULL), "<0xOFF" (sep "<": the same module
 * as the frame before) or "@MODULE+0xOFF" to out; 0 if it does not fit. */
static int append_frame(char *out, size_t len, size_t *at, const char *sep, const Dl_info *di,
			uintptr_t ip)
{
	unsigned long off = (unsigned long)(ip - (uintptr_t)di->dli_fbase);
	int n = sep && sep[0] == '<' ? snprintf(out + *at, len - *at, "<0x%lx", off)
				      : snprintf(out + *at, len - *at, "%s%s+0x%lx", sep ? sep : "",
						 base_name(di->dli_fname), off);
	if (n < 0 || (size_t)n >= len - *at)
		return 0;
	*at += (size_t)n;
	return 1;
}

/*
 * "libemberprof_noalloc.so.0+0x1a2b<0x1f00" : the innermost `depth` return
 * addresses inside libemberprof (the innermost first; depth 2 tells apart
 * the callers of a helper such as ember__write_all); else the first frame
 * outside this library. With EMBER_FAULTS_ELFUTILS=N, a call made inside
 * elfutils (libdw, libelf) on the agent's behalf is told apart by its N
 * innermost elfutils return addresses too, in front:
 * "libdw.so.1+0x3c1f<0x2a10@libemberprof_noalloc.so.0+0x1a2b": every
 * allocation site of libdw the agent reaches is then a site of its own.
 */
static void site_of(char *out, size_t len)
{
	struct frames f = { .n = 0 };
	_Unwind_Backtrace(collect, &f);
	Dl_info self, first = { 0 }, di;
	uintptr_t first_ip = 0;
	size_t at = 0;
	int found = 0, elf_found = 0;
	if (!dladdr((void *)site_of, &self))
		self.dli_fbase = NULL;
	out[0] = '\0';
	for (int i = 0; i < f.n && found < depth; i++) {
		uintptr_t ip = f.ip[i] - 1; /* the call, not the return address */
		if (!dladdr((void *)ip, &di) || !di.dli_fname)
			continue;
		if (di.dli_fbase == self.dli_fbase)
			continue;
		if (!found && elf_found < elf_depth && is_elfutils(di.dli_fname)) {
			if (!append_frame(out, len, &at, elf_found ? "<" : NULL, &di, ip))
				break;
			elf_found++;
			continue;
		}
		if (!strncmp(base_name(di.dli_fname), "libemberprof", 12)) {
			const char *sep = found ? "<" : elf_found ? "@" : NULL;
			if (!append_frame(out, len, &at, sep, &di, ip))
				break;
			found++;
			continue;
		}
		if (found) /* left the agent's code: a callback from a library */
			break;
		if (!first_ip) {
			first = di;
			first_ip = ip;
		}
	}
	if (found)
		return;
	if (first_ip)
		snprintf(out, len, "%s+0x%lx", base_name(first.dli_fname),
			 (unsigned long)(first_ip - (uintptr_t)first.dli_fbase));
	else
		snprintf(out, len, "unknown");
}

/* One line "WHAT MODULE+0xOFF..." of the calling stack (for the report). */
static void stack_record_as(const char *what)
{
	struct frames f = { .n = 0 };
	_Unwind_Backtrace(collect, &f);
	char line[2048];
	size_t at = (size_t)snprintf(line, sizeof(line), "%s", what);
	Dl_info di;
	for (int i = 1; i < f.n && at < sizeof(line) - 100; i++) {
		uintptr_t ip = f.ip[i] - 1;
		if (dladdr((void *)ip, &di) && di.dli_fname)
			at += (size_t)snprintf(line + at, sizeof(line) - at, " %s+0x%lx",
					       base_name(di.dli_fname),
					       (unsigned long)(ip - (uintptr_t)di.dli_fbase));
		else
			at += (size_t)snprintf(line + at, sizeof(line) - at, " ?");
	}
	line[at++] = '\n';
	record(line, at);
}

static void stack_record(void)
{
	stack_record_as("stack");
}

/* After a fault, a crash of the program: where (then the default action).
 * Only installed in fail mode. */
static void on_crash(int sig)
{
	char what[32];
	snprintf(what, sizeof(what), "crash %d", sig);
	stack_record_as(what);
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * Is this a call the dynamic loader makes on behalf of a library's own
 * code (not of a dlopen from libc)? That is glibc allocating the dynamic
 * TLS block of a dlopen'ed library (libelf's and libdw's error codes) at a
 * thread's first access: glibc ends the process when that malloc fails,
 * which no caller can prevent, so it is not a site to fail. The agent
 * makes that first access itself right after reserving the memory
 * (src/util/dep_elfutils.h, ember__elfutils_thread_init).
 */
static int loader_for_library(void)
{
	struct frames f = { .n = 0 };
	_Unwind_Backtrace(collect, &f);
	Dl_info self, di;
	if (!dladdr((void *)loader_for_library, &self))
		return 0;
	int in_loader = 0;
	for (int i = 0; i < f.n; i++) {
		if (!dladdr((void *)(f.ip[i] - 1), &di) || !di.dli_fname)
			return 0;
		if (di.dli_fbase == self.dli_fbase)
			continue;
		const char *b = base_name(di.dli_fname);
		if (!strncmp(b, "ld-linux", 8)) {
			in_loader = 1;
			continue;
		}
		return in_loader && strncmp(b, "libc.so", 7) && strncmp(b, "libemberprof", 12);
	}
	return 0;
}

/*
 * Should this call of fn fail? 0: no; else the errno to fail with. Called
 * on entry of every wrapper; busy is set by the caller around it.
 */
static int should_fail(const char *fn, int err)
{
	if (!agent_thread)
		return 0;
	pthread_once(&once, init);
	if (mode == MODE_OFF)
		return 0;
	if (mode == MODE_FAIL && (strcmp(fn, want_fn) || atomic_load(&injected)))
		return 0;
	if (loader_for_library())
		return 0;
	char site[256], name[17] = { 0 }, line[400];
	site_of(site, sizeof(site));
	prctl(PR_GET_NAME, name);
	if (mode == MODE_COUNT) {
		int n = snprintf(line, sizeof(line), "call %s %s %s\n", fn, site, name);
		record(line, (size_t)n);
		return 0;
	}
	if (strcmp(site, want_site))
		return 0;
	int no = 0;
	if (!atomic_compare_exchange_strong(&injected, &no, 1))
		return 0;
	if (want_errno)
		err = want_errno;
	int n = snprintf(line, sizeof(line), "injected %s %s %d %s\n", fn, site, err, name);
	record(line, (size_t)n);
	stack_record();
	return err;
}

/* Runs the check with nested calls passed through. */
#define CHECK(fn, err)                                  \
	({                                              \
		int e_ = 0;                             \
		if (agent_thread && !busy) {            \
			busy = 1;                       \
			e_ = should_fail(fn, err);      \
			busy = 0;                       \
		}                                       \
		e_;                                     \
	})

/* Returns fail_value with errno set if this call is the one to fail. */
#define FAIL_IF_CHOSEN(fn, err, fail_value)         \
	do {                                        \
		int f_ = CHECK(fn, err);            \
		if (f_) {                           \
			errno = f_;                 \
			return fail_value;          \
		}                                   \
	} while (0)

/* Lazily resolved next definition (dlsym may allocate: nested, passed). */
#define REAL(name)                                                        \
	static __typeof__(&name) real_##name;                             \
	if (!real_##name) {                                               \
		int b_ = busy;                                            \
		busy = 1;                                                 \
		real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name); \
		busy = b_;                                                \
	}

/* ---- which threads are the agent's ---- */

EXPORT int pthread_setname_np(pthread_t t, const char *name)
{
	if (!pthread_equal(t, pthread_self())) {
		REAL(pthread_setname_np);
		return real_pthread_setname_np(t, name);
	}
	if (strlen(name) > 15)
		return ERANGE;
	if (prctl(PR_SET_NAME, name) < 0)
		return errno;
	agent_thread = !strncmp(name, "emberprof", 9);
	return 0;
}

/* ---- allocations: ENOMEM ---- */

EXPORT void *malloc(size_t n)
{
	FAIL_IF_CHOSEN("malloc", ENOMEM, NULL);
	return __libc_malloc(n);
}

EXPORT void *calloc(size_t a, size_t b)
{
	FAIL_IF_CHOSEN("calloc", ENOMEM, NULL);
	return __libc_calloc(a, b);
}

EXPORT void *realloc(void *p, size_t n)
{
	if (!p)
		FAIL_IF_CHOSEN("malloc", ENOMEM, NULL); /* realloc(NULL, n) is malloc(n) */
	else if (n)
		FAIL_IF_CHOSEN("realloc", ENOMEM, NULL);
	return __libc_realloc(p, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
	FAIL_IF_CHOSEN("memalign", ENOMEM, NULL);
	return __libc_memalign(align, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	FAIL_IF_CHOSEN("aligned_alloc", ENOMEM, NULL);
	return __libc_memalign(align, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	int e = CHECK("posix_memalign", ENOMEM);
	if (e)
		return e;
	void *p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

/* ---- opens: EMFILE (or EMBER_FAULTS_ERRNO, e.g. EACCES) ---- */

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

/* open's optional third argument, after `flags` (a statement expression:
 * va_start needs the wrapper's own frame). */
#define MODE_ARG(flags)                                  \
	({                                               \
		va_list ap_;                             \
		va_start(ap_, flags);                    \
		mode_t m_ = mode_arg(flags, ap_);        \
		va_end(ap_);                             \
		m_;                                      \
	})

/* The one wrapper of each family, for each of its names. */
#define OPEN_WRAPPER(name)                                          \
	EXPORT int name(const char *path, int flags, ...)           \
	{                                                           \
		mode_t m = MODE_ARG(flags);                         \
		FAIL_IF_CHOSEN(#name, EMFILE, -1);                  \
		REAL(name);                                         \
		return real_##name(path, flags, m);                 \
	}
OPEN_WRAPPER(open)
OPEN_WRAPPER(open64)

#define OPENAT_WRAPPER(name)                                        \
	EXPORT int name(int dfd, const char *path, int flags, ...)  \
	{                                                           \
		mode_t m = MODE_ARG(flags);                         \
		FAIL_IF_CHOSEN(#name, EMFILE, -1);                  \
		REAL(name);                                         \
		return real_##name(dfd, path, flags, m);            \
	}
OPENAT_WRAPPER(openat)
OPENAT_WRAPPER(openat64)

EXPORT int creat(const char *path, mode_t m)
{
	FAIL_IF_CHOSEN("creat", EMFILE, -1);
	REAL(creat);
	return real_creat(path, m);
}

#define FOPEN_WRAPPER(name)                                         \
	EXPORT FILE *name(const char *path, const char *how)        \
	{                                                           \
		FAIL_IF_CHOSEN(#name, EMFILE, NULL);                \
		REAL(name);                                         \
		return real_##name(path, how);                      \
	}
FOPEN_WRAPPER(fopen)
FOPEN_WRAPPER(fopen64)

/* ---- writes: ENOSPC ---- */

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	FAIL_IF_CHOSEN("write", ENOSPC, -1);
	REAL(write);
	return real_write(fd, buf, n);
}

#define PWRITE_WRAPPER(name)                                                \
	EXPORT ssize_t name(int fd, const void *buf, size_t n, off_t off)   \
	{                                                                   \
		FAIL_IF_CHOSEN(#name, ENOSPC, -1);                          \
		REAL(name);                                                 \
		return real_##name(fd, buf, n, off);                        \
	}
PWRITE_WRAPPER(pwrite)
PWRITE_WRAPPER(pwrite64)

EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	FAIL_IF_CHOSEN("writev", ENOSPC, -1);
	REAL(writev);
	return real_writev(fd, iov, n);
}

/* ---- mappings: ENOMEM ---- */

#define MMAP_WRAPPER(name)                                                                 \
	EXPORT void *name(void *addr, size_t len, int prot, int flags, int fd, off_t off) \
	{                                                                                  \
		FAIL_IF_CHOSEN(#name, ENOMEM, MAP_FAILED);                                 \
		REAL(name);                                                                \
		return real_##name(addr, len, prot, flags, fd, off);                       \
	}
MMAP_WRAPPER(mmap)
MMAP_WRAPPER(mmap64)
