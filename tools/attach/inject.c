/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inject.c - a function of libemberprof called inside a running process
 * on a borrowed thread (inject.h): choosing the thread, ptrace, the
 * loader's addresses from the process's libc, the page and its stub.
 */
#include "attach/inject.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach/inject_arch.h"
#include "emberprof.h"
#include "util/error.h"

void (*ember__inject_step_hook)(int step);

struct ember__inject {
	pid_t pid;
	uint64_t page; /* in the process; 0: none yet */
	int memfd;     /* /proc/PID/mem, opened while tracing */
	pid_t stub_tid; /* the thread that ran the stub last */
	int copy;      /* the library goes in as an in-memory copy */
	int copy_loaded; /* ...which the process holds now */
	char soname[256]; /* the library's DT_SONAME (copy: found by it) */
};

static void step(int n)
{
	if (ember__inject_step_hook)
		ember__inject_step_hook(n);
}

void ember__inject_free(ember__inject *inj)
{
	if (!inj)
		return;
	if (inj->memfd >= 0)
		close(inj->memfd);
	free(inj);
}

/* ---- which thread ---- */

/*
 * System calls whose interruption the kernel undoes itself (they return
 * -ERESTARTSYS or -ERESTARTNOHAND to a stop, and are restarted with their
 * arguments): a thread waiting in one can be borrowed without the program
 * seeing anything. `arg` is the argument that must be 0 (a timeout) for
 * the call to qualify, or -1.
 */
static const struct {
	long nr;
	int arg;
} restartable[] = {
	{SYS_read, -1}, {SYS_readv, -1}, {SYS_pread64, -1}, {SYS_write, -1},
	{SYS_recvfrom, -1}, {SYS_recvmsg, -1}, {SYS_accept, -1}, {SYS_accept4, -1},
	{SYS_wait4, -1}, {SYS_waitid, -1}, {SYS_futex, 3}, {SYS_ppoll, 2},
	{SYS_pselect6, 4}, {SYS_rt_sigsuspend, -1},
#ifdef SYS_pause
	{SYS_pause, -1},
#endif
#ifdef SYS_select
	{SYS_select, 4},
#endif
};

/* Calls that return EINTR at a stop (epoll_wait...: the kernel never
 * restarts them): borrowed only when nothing better waits, and then
 * restarted by the stub, never returned to the program. */
static int eintr_call(long nr)
{
	return
#ifdef SYS_epoll_wait
		nr == SYS_epoll_wait ||
#endif
		nr == SYS_epoll_pwait;
}

/* /proc/PID/task/TID/syscall: the call a waiting thread is in (its number
 * and arguments), -1 when it runs or waits outside one. */
static long waiting_in(pid_t pid, pid_t tid, uint64_t args[6])
{
	char path[96], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	long nr;
	unsigned long long a[6];
	if (sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx", &nr, &a[0], &a[1], &a[2], &a[3], &a[4],
		   &a[5]) != 7)
		return -1;
	for (int i = 0; i < 6; i++)
		args[i] = a[i];
	return nr;
}

/* How good a thread is to borrow: 3 waits in a restartable call (2 if it
 * is not the main thread), 1 in a call whose EINTR is made a restart, 0
 * not at all (running: it may hold its program's locks). */
static int rank(pid_t pid, pid_t tid, long *nr_out)
{
	uint64_t a[6];
	long nr = waiting_in(pid, tid, a);
	*nr_out = nr;
	if (nr < 0)
		return 0;
	for (size_t i = 0; i < sizeof(restartable) / sizeof(restartable[0]); i++)
		if (restartable[i].nr == nr)
			return restartable[i].arg < 0 || a[restartable[i].arg] == 0 ? 2 + (tid == pid)
										: 0;
	return eintr_call(nr) ? 1 : 0;
}

static pid_t pick_thread(pid_t pid, long *nr)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -ESRCH;
	struct dirent *de;
	pid_t best = 0;
	int best_rank = 0;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		long n;
		int r = tid > 0 ? rank(pid, tid, &n) : 0;
		if (r > best_rank) {
			best = tid;
			best_rank = r;
			*nr = n;
		}
	}
	closedir(d);
	return best;
}

/* ---- the loader's addresses ---- */

/* The executable mapping of the first file in maps whose path ends in
 * `suffix` (copied to path): its start, and its file offset in *off. 0
 * when none. (Only an executable mapping is the loaded module: a reader
 * may map the same file too, as the agent's symbolizer does.) A suffix
 * "/NAME*" matches a file name that starts with NAME. */
static uint64_t find_module(pid_t pid, const char *suffix, char *path, size_t n, uint64_t *off)
{
	size_t sl = strlen(suffix);
	int prefix = sl > 1 && suffix[sl - 1] == '*';
	sl -= (size_t)prefix;
	char mp[64], line[4096];
	snprintf(mp, sizeof(mp), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(mp, "re");
	if (!f)
		return 0;
	uint64_t base = 0;
	while (!base && fgets(line, sizeof(line), f)) {
		unsigned long long start, o;
		char perms[8];
		int pos = 0;
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%llx-%*[0-9a-f] %7s %llx %*s %*s %n", &start, perms, &o, &pos) < 3 ||
		    !pos || perms[2] != 'x')
			continue;
		const char *p = line + pos, *name = strrchr(p, '/');
		size_t pl = strlen(p);
		if (p[0] != '/' || (prefix ? strncmp(name, suffix, sl) != 0
					   : pl < sl || strcmp(p + pl - sl, suffix) != 0))
			continue;
		snprintf(path, n, "%s", p);
		base = start;
		*off = o;
	}
	fclose(f);
	return base;
}

/* The ELF file mapped (read-only): its start and *len, when it is a
 * 64-bit ELF whose section headers are in it; NULL otherwise. Unmapped
 * by the caller (munmap). */
static const uint8_t *map_elf(const char *file, size_t *len)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	off_t l = lseek(fd, 0, SEEK_END);
	void *m = l > (off_t)sizeof(Elf64_Ehdr) ? mmap(NULL, (size_t)l, PROT_READ, MAP_PRIVATE, fd, 0)
						 : MAP_FAILED;
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	const Elf64_Ehdr *eh = m;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > (uint64_t)l ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > (uint64_t)l) {
		munmap(m, (size_t)l);
		return NULL;
	}
	*len = (size_t)l;
	return m;
}

/* The first section of `type` of the mapped ELF b[0..L) that lies in it
 * with its linked string table (*str): the section, or NULL. */
static const Elf64_Shdr *elf_section(const uint8_t *b, size_t L, uint32_t type,
				     const Elf64_Shdr **str)
{
	const Elf64_Ehdr *eh = (const void *)b;
	for (int i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *sh = (const void *)(b + eh->e_shoff + (size_t)i * sizeof(*sh));
		if (sh->sh_type != type || sh->sh_link >= eh->e_shnum)
			continue;
		const Elf64_Shdr *st = (const void *)(b + eh->e_shoff + (size_t)sh->sh_link * sizeof(*st));
		if (sh->sh_offset + sh->sh_size > L || st->sh_offset + st->sh_size > L)
			continue;
		*str = st;
		return sh;
	}
	return NULL;
}

/* The value of a defined symbol of the ELF file's .dynsym, and in
 * *delta the address less the file offset of the PT_LOAD that holds file
 * offset `off` (a mapping of offset off at start has load bias
 * start - off - delta). 0 when absent. */
static uint64_t elf_symbol(const char *file, const char *name, uint64_t off, uint64_t *delta)
{
	size_t L = 0;
	const uint8_t *b = map_elf(file, &L);
	if (!b)
		return 0;
	const Elf64_Ehdr *eh = (const void *)b;
	uint64_t value = 0, d = 0;
	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const void *)(b + eh->e_phoff + (size_t)i * sizeof(*ph));
		if (ph->p_type == PT_LOAD && (ph->p_offset & ~(uint64_t)0xfff) <= off &&
		    off < ph->p_offset + ph->p_filesz)
			d = ph->p_vaddr - ph->p_offset;
	}
	const Elf64_Shdr *st = NULL, *sh = elf_section(b, L, SHT_DYNSYM, &st);
	size_t nsym = sh ? sh->sh_size / sizeof(Elf64_Sym) : 0;
	for (size_t k = 0; k < nsym; k++) {
		const Elf64_Sym *s = (const void *)(b + sh->sh_offset + k * sizeof(Elf64_Sym));
		if (s->st_shndx == SHN_UNDEF || s->st_name >= st->sh_size)
			continue;
		const char *nm = (const char *)b + st->sh_offset + s->st_name;
		if (!strncmp(nm, name, st->sh_size - s->st_name) && strlen(nm) == strlen(name)) {
			value = s->st_value;
			break;
		}
	}
	munmap((void *)b, L);
	*delta = d;
	return value;
}

/* The DT_SONAME of the ELF file (its .dynamic section's), into buf: 0,
 * or -1 when it has none or cannot be read. */
static int elf_soname(const char *file, char *buf, size_t n)
{
	size_t L = 0;
	const uint8_t *b = map_elf(file, &L);
	if (!b)
		return -1;
	int rc = -1;
	const Elf64_Shdr *st = NULL, *sh = elf_section(b, L, SHT_DYNAMIC, &st);
	size_t ndyn = sh ? sh->sh_size / sizeof(Elf64_Dyn) : 0;
	for (size_t k = 0; k < ndyn; k++) {
		const Elf64_Dyn *d = (const void *)(b + sh->sh_offset + k * sizeof(Elf64_Dyn));
		if (d->d_tag == DT_NULL)
			break;
		if (d->d_tag != DT_SONAME || d->d_un.d_val >= st->sh_size)
			continue;
		const char *nm = (const char *)b + st->sh_offset + d->d_un.d_val;
		size_t nl = strnlen(nm, st->sh_size - d->d_un.d_val);
		if (nl && nl < n && nl < st->sh_size - d->d_un.d_val) {
			memcpy(buf, nm, nl);
			buf[nl] = 0;
			rc = 0;
		}
		break;
	}
	munmap((void *)b, L);
	return rc;
}

/* dlopen, dlsym and dlerror in the process: libc.so.6's (glibc 2.34+). */
static int loader_addrs(pid_t pid, ember__iaddrs *a)
{
	char path[4096], rooted[4200];
	uint64_t off = 0, base = find_module(pid, "/libc.so.6", path, sizeof(path), &off);
	if (!base)
		return ember__error(EMBER_ERR_INVALID,
				    "process %d: no glibc (libc.so.6) is mapped: there is no loader "
				    "to call", (int)pid);
	/* the file as the process sees it (its mount namespace) */
	snprintf(rooted, sizeof(rooted), "/proc/%d/root%s", (int)pid, path);
	uint64_t d = 0;
	a->dlopen = elf_symbol(rooted, "dlopen", off, &d);
	a->dlsym = elf_symbol(rooted, "dlsym", off, &d);
	a->dlerror = elf_symbol(rooted, "dlerror", off, &d);
	if (!a->dlopen || !a->dlsym || !a->dlerror)
		return ember__error(EMBER_ERR_INVALID,
				    "process %d: its libc (%s) exports no dlopen (glibc before "
				    "2.34?): the library cannot be loaded into it",
				    (int)pid, path);
	uint64_t bias = base - off - d;
	a->dlopen += bias;
	a->dlsym += bias;
	a->dlerror += bias;
	a->flags = 2; /* RTLD_NOW */
	return 0;
}

/* ---- ptrace ---- */

/* Waits for tid's next stop; passes signals on (they were the program's)
 * with `resume` (PTRACE_CONT or PTRACE_SYSCALL) until a stop `want`
 * accepts. 0, or -ESRCH when the thread or process has exited. */
static int wait_stop(pid_t tid, int resume, int (*want)(int status))
{
	for (int i = 0; i < 1000; i++) {
		int st;
		pid_t w = waitpid(tid, &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			return -ESRCH;
		if (want(st))
			return 0;
		int sig = WSTOPSIG(st);
		/* a signal for the program: delivered as it would have been */
		int pass = (st >> 16) == 0 && sig != (SIGTRAP | 0x80) ? sig : 0;
		if ((st >> 16) == PTRACE_EVENT_STOP)
			pass = 0; /* a group stop or our interrupt: not a signal */
		if (ptrace((enum __ptrace_request)resume, tid, NULL, (void *)(long)pass) != 0)
			return -ESRCH;
	}
	return -ESRCH;
}

static int is_interrupt(int st)
{
	return WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP;
}

static int is_syscall_stop(int st)
{
	return WIFSTOPPED(st) && WSTOPSIG(st) == (SIGTRAP | 0x80);
}

static int mem_write(ember__inject *inj, uint64_t addr, const void *b, size_t n)
{
	return pwrite(inj->memfd, b, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

static int mem_read(ember__inject *inj, uint64_t addr, void *b, size_t n)
{
	return pread(inj->memfd, b, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

/* One system call made by the stopped thread (on its own system call
 * instruction): its return, or -1 when it could not be made. The
 * thread's registers are put back at once. */
static long remote_syscall(pid_t tid, const ember__iregs *orig, long nr, const uint64_t args[6])
{
	ember__iregs r = *orig;
	ember__iarch_setup_syscall(&r, ember__iarch_syscall_insn(orig), nr, args);
	long ret = -1;
	if (ember__iarch_set(tid, &r) != 0)
		return -1;
	/* to the call's entry, then its exit */
	if (ptrace(PTRACE_SYSCALL, tid, NULL, NULL) == 0 &&
	    wait_stop(tid, PTRACE_SYSCALL, is_syscall_stop) == 0 &&
	    ptrace(PTRACE_SYSCALL, tid, NULL, NULL) == 0 &&
	    wait_stop(tid, PTRACE_SYSCALL, is_syscall_stop) == 0 && ember__iarch_get(tid, &r) == 0)
		ret = ember__iarch_retval(&r);
	(void)ember__iarch_set(tid, orig); /* as it was, before anything else */
	return ret;
}

/* ---- the in-memory copy (a process in another mount namespace) ---- */

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001u
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002u
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010u /* Linux 6.3: executable even under vm.memfd_noexec=1 */
#endif
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_SEAL_SEAL 0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#define F_SEAL_WRITE 0x0008
#endif

/* Is a copy of ours loaded in pid: an executable mapping of the memfd? */
static int copy_mapped(pid_t pid)
{
	char path[4096];
	uint64_t off = 0;
	return find_module(pid, "/" EMBER_INJECT_MEMFD " (deleted)", path, sizeof(path), &off) != 0;
}

/* The library's bytes written into the process's descriptor fd (through
 * /proc/PID/fd/FD: ptrace access allows it), then sealed (no one changes
 * it after). 0, or -1 with the reason in why. */
static int fill_copy(pid_t pid, int fd, const char *lib, char *why, size_t n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	int in = open(lib, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
	if (in < 0) {
		snprintf(why, n, "attach: %s cannot be read: %s", lib, strerror(errno));
		return -1;
	}
	if ((out = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
		snprintf(why, n, "process %d: its in-memory copy of the library cannot be opened "
			 "(%s): %s", (int)pid, path, strerror(errno));
		goto done;
	}
	char buf[16384];
	for (;;) {
		ssize_t r = read(in, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(why, n, "attach: %s cannot be read: %s", lib, strerror(errno));
			goto done;
		}
		if (r == 0)
			break;
		for (ssize_t w = 0; w < r;) {
			ssize_t k = write(out, buf + w, (size_t)(r - w));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				snprintf(why, n, "process %d: the library cannot be copied into its "
					 "memory: %s", (int)pid, k < 0 ? strerror(errno) : "short write");
				goto done;
			}
			w += k;
		}
	}
	if (fcntl(out, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
		snprintf(why, n, "process %d: its in-memory copy of the library cannot be sealed: %s",
			 (int)pid, strerror(errno));
		goto done;
	}
	rc = 0;
done:
	if (out >= 0)
		close(out);
	close(in);
	return rc;
}

/*
 * The library copied into a memfd named "emberprof" that the stopped
 * thread creates (close-on-exec): its descriptor number in the process,
 * which the stub closes after dlopen; or -1 with the reason in why,
 * nothing left open in the process. Between the memfd_create and the
 * stub (the copy: milliseconds) emberprof's death leaves that descriptor
 * open in the process (step 9 of the tests).
 */
static int make_copy(ember__inject *inj, pid_t tid, const ember__iregs *orig, const char *lib,
		     char *why, size_t n)
{
	static const char name[] = EMBER_INJECT_MEMFD_NAME;
	if (mem_write(inj, inj->page + EMBER_INJ_LIB, name, sizeof(name)) != 0) {
		snprintf(why, n, "process %d: the loader call could not be set up", (int)inj->pid);
		return -1;
	}
	uint64_t a[6] = {inj->page + EMBER_INJ_LIB, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC, 0, 0, 0, 0};
	long fd = remote_syscall(tid, orig, SYS_memfd_create, a);
	if (fd == -EINVAL) { /* a kernel before 6.3: every memfd may be executable */
		a[1] &= ~(uint64_t)MFD_EXEC;
		fd = remote_syscall(tid, orig, SYS_memfd_create, a);
	}
	if (fd < 0) {
		snprintf(why, n, "process %d: no in-memory copy of the library can be made in it "
			 "(memfd_create: %s%s)", (int)inj->pid, strerror((int)-fd),
			 fd == -EACCES ? "; vm.memfd_noexec=2 forbids executable memfds" : "");
		return -1;
	}
	step(9);
	if (fill_copy(inj->pid, (int)fd, lib, why, n) < 0) {
		uint64_t c[6] = {(uint64_t)fd, 0, 0, 0, 0, 0};
		(void)remote_syscall(tid, orig, SYS_close, c);
		return -1;
	}
	return (int)fd;
}

/* The page, mapped by the stopped thread: its address, or 0. */
static uint64_t map_page(pid_t tid, const ember__iregs *orig)
{
	uint64_t args[6] = {0, EMBER_INJ_PAGE_LEN, PROT_READ | PROT_WRITE | PROT_EXEC,
			    MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0};
	long v = remote_syscall(tid, orig, SYS_mmap, args);
	return v < 0 && v > -4096 ? 0 : (uint64_t)v;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The string at addr in the process (dlerror's), into buf. */
static void read_string(ember__inject *inj, uint64_t addr, char *buf, size_t n)
{
	buf[0] = 0;
	if (addr && mem_read(inj, addr, buf, n - 1) != 0)
		snprintf(buf, n, "(unreadable)");
	buf[n - 1] = 0;
}

/*
 * Borrows a thread of pid (pick_thread), seizes and interrupts it: 0 with
 * *tid stopped (its call's number in *nr, its registers in *orig, the
 * call's arguments as /proc showed them before the stop in args: once
 * stopped, aarch64's /proc/TID/syscall shows no call), or
 * EMBER_ERR_INVALID with the reason (nothing left seized).
 */
static int seize(pid_t pid, pid_t *tid_out, long *nr, ember__iregs *orig, uint64_t args[6])
{
	pid_t tid = pick_thread(pid, nr);
	if (tid > 0 && waiting_in(pid, tid, args) != *nr)
		memset(args, 0, 6 * sizeof(args[0]));
	if (tid == -ESRCH)
		return ember__error(EMBER_ERR_INVALID, "process %d has exited", (int)pid);
	if (tid <= 0)
		return ember__error(EMBER_ERR_INVALID,
				    "process %d: no thread of it waits in a system call, and one is "
				    "needed to load the library safely (a running thread may hold "
				    "its program's locks): try again when it is less busy",
				    (int)pid);
	step(3);
	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD) != 0) {
		int e = errno;
		if (e == EPERM)
			return ember__error(EMBER_ERR_INVALID,
					    "process %d: ptrace refused (EPERM: another user's, not "
					    "dumpable, Yama's ptrace_scope, or traced already by a "
					    "debugger): --wall needs it to load the library",
					    (int)pid);
		return ember__error_errno(EMBER_ERR_INVALID, e, "process %d: ptrace(PTRACE_SEIZE)",
					  (int)pid);
	}
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0 || wait_stop(tid, PTRACE_CONT, is_interrupt) != 0 ||
	    ember__iarch_get(tid, orig) != 0) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return ember__error(EMBER_ERR_INVALID, "process %d exited", (int)pid);
	}
	if (ember__iarch_syscall(orig) < 0) {
		/* it woke up before the interrupt reached it */
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return ember__error(EMBER_ERR_INVALID,
				    "process %d: its thread %d stopped waiting before it could be "
				    "borrowed: try again",
				    (int)pid, (int)tid);
	}
	*tid_out = tid;
	return 0;
}

int ember__inject_call(ember__inject **injp, pid_t pid, const char *lib, int copy, const char *fn,
		       const char *arg, unsigned timeout_ms, int *result)
{
	if (strlen(lib) >= EMBER_INJ_FN - EMBER_INJ_LIB || strlen(fn) >= EMBER_INJ_ARG - EMBER_INJ_FN ||
	    strlen(arg) >= EMBER_INJ_PAGE_LEN - EMBER_INJ_ARG)
		return ember__error(EMBER_ERR_INVALID, "attach: the settings are too long (%zu bytes)",
				    strlen(arg));
	ember__iaddrs addrs;
	int rc = loader_addrs(pid, &addrs);
	if (rc < 0)
		return rc;
	addrs.close_fd = -1;
	char fdpath[64];
	const char *load = lib; /* what the stub's dlopen opens */
	ember__inject *inj = *injp;
	if (!inj) {
		if (!(inj = calloc(1, sizeof(*inj))))
			return ember__error_oom("attach");
		inj->pid = pid;
		inj->memfd = -1;
		inj->copy = copy;
		*injp = inj;
	}
	if (inj->copy && !inj->soname[0] && elf_soname(lib, inj->soname, sizeof(inj->soname)) < 0)
		return ember__error(EMBER_ERR_INVALID,
				    "process %d: %s has no SONAME, by which the process would find "
				    "its in-memory copy again: it cannot be loaded there",
				    (int)pid, lib);
	char own[4096];
	uint64_t own_off = 0;
	if (inj->copy && find_module(pid, "/libemberprof*", own, sizeof(own), &own_off))
		return ember__error(EMBER_ERR_INVALID,
				    "process %d has a libemberprof of another file loaded (%s, not "
				    "%s): a copy of ours would be a second agent library beside it, "
				    "and its name would find that one: not loading it",
				    (int)pid, own, lib);
	long nr = -1;
	pid_t tid = 0;
	ember__iregs orig, resume, entry;
	uint64_t args[6] = {0};
	if ((rc = seize(pid, &tid, &nr, &orig, args)) < 0)
		return rc;
	int err = 0;
	char why[512] = "";
	step(4);
	if (inj->memfd < 0) {
		char mp[64];
		snprintf(mp, sizeof(mp), "/proc/%d/mem", (int)pid);
		inj->memfd = open(mp, O_RDWR | O_CLOEXEC);
	}
	if (inj->memfd < 0 || (!inj->page && !(inj->page = map_page(tid, &orig)))) {
		snprintf(why, sizeof(why), "process %d: no page could be mapped in it for the loader "
			 "call", (int)pid);
		err = 1;
		goto detach;
	}
	step(5);
	/* what dlopen opens: the file, or its in-memory copy (found again by
	 * its soname once loaded: RTLD_NOLOAD, never a second copy) */
	if (inj->copy && (inj->copy_loaded || copy_mapped(pid))) {
		load = inj->soname;
		addrs.flags |= 4; /* RTLD_NOLOAD */
	} else if (inj->copy) {
		int fd = make_copy(inj, tid, &orig, lib, why, sizeof(why));
		if (fd < 0) {
			err = 1;
			goto detach;
		}
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		load = fdpath;
		addrs.close_fd = fd;
	}
	/* the page: strings, then the stub with the registers to go back to */
	uint8_t *page = calloc(1, EMBER_INJ_PAGE_LEN);
	resume = orig;
	uint64_t now[6];
	if (waiting_in(pid, tid, now) == nr) /* stopped: the call's saved arguments */
		memcpy(args, now, sizeof(now));
	ember__iarch_restart(&resume, eintr_call(nr) && ember__iarch_syscall(&orig) == nr, args[0]);
	if (!page || ember__iarch_stub(page, inj->page, &resume, &addrs, &entry) != 0) {
		free(page);
		snprintf(why, sizeof(why), "attach: out of memory");
		err = 1;
		goto close_copy;
	}
	memcpy(page + EMBER_INJ_LIB, load, strlen(load) + 1);
	memcpy(page + EMBER_INJ_FN, fn, strlen(fn) + 1);
	memcpy(page + EMBER_INJ_ARG, arg, strlen(arg) + 1);
	int wrote = mem_write(inj, inj->page, page, EMBER_INJ_PAGE_LEN);
	free(page);
	if (wrote != 0 || ember__iarch_set(tid, &entry) != 0) {
		(void)ember__iarch_set(tid, &orig);
		snprintf(why, sizeof(why), "process %d: the loader call could not be set up", (int)pid);
		err = 1;
		goto close_copy;
	}
	inj->stub_tid = tid;
	step(6);
close_copy:
	if (err && addrs.close_fd >= 0) { /* the stub will not run: closed here */
		uint64_t c[6] = {(uint64_t)addrs.close_fd, 0, 0, 0, 0, 0};
		(void)remote_syscall(tid, &orig, SYS_close, c);
	}
detach:
	/* the thread runs on: its own call, or the stub, which ends where it
	 * was, without us */
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
	if (err)
		return ember__error(EMBER_ERR_INVALID, "%s", why);
	step(7);
	uint64_t done = 0;
	int64_t end = mono_ms() + timeout_ms;
	while (mem_read(inj, inj->page + EMBER_INJ_DATA + EMBER_INJ_R_DONE, &done, 8) == 0 && !done &&
	       mono_ms() < end)
		usleep(2000);
	if (!done)
		return ember__error(EMBER_ERR_INVALID,
				    kill(pid, 0) != 0 ? "process %d exited during the loader call"
						      : "process %d: the loader call has not returned in "
							"time (it goes on in the process)",
				    (int)pid);
	uint64_t status = 0, ret = 0, errp = 0;
	(void)mem_read(inj, inj->page + EMBER_INJ_DATA + EMBER_INJ_R_STATUS, &status, 8);
	(void)mem_read(inj, inj->page + EMBER_INJ_DATA + EMBER_INJ_R_RET, &ret, 8);
	(void)mem_read(inj, inj->page + EMBER_INJ_DATA + EMBER_INJ_R_ERR, &errp, 8);
	if (inj->copy && status != 1)
		inj->copy_loaded = 1;
	if (status != 3) {
		char msg[512];
		read_string(inj, errp, msg, sizeof(msg));
		if (status == 1 && addrs.close_fd >= 0)
			return ember__error(EMBER_ERR_INVALID,
					    "process %d: loading the in-memory copy of the library "
					    "(dlopen of %s, which needs /proc mounted in the process's "
					    "mount namespace) failed in the process: %s",
					    (int)pid, load, msg[0] ? msg : "(no reason given)");
		if (status == 1 && inj->copy)
			return ember__error(EMBER_ERR_INVALID,
					    "process %d: the in-memory copy of the library mapped in it "
					    "is not found by its name %s: %s",
					    (int)pid, inj->soname, msg[0] ? msg : "(no reason given)");
		return ember__error(EMBER_ERR_INVALID, "process %d: %s failed in the process: %s",
				    (int)pid, status == 1 ? "loading the library (dlopen)" : "dlsym",
				    msg[0] ? msg : "(no reason given)");
	}
	*result = (int)(int32_t)ret;
	return 0;
}

/* Is thread tid of pid waiting in a system call outside [lo, hi)? */
static int waits_outside(pid_t pid, pid_t tid, uint64_t lo, uint64_t hi)
{
	char path[96], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1; /* gone: not in the page */
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	long nr;
	unsigned long long pc;
	if (sscanf(buf, "%ld %*s %*s %*s %*s %*s %*s %*s %llx", &nr, &pc) != 2 || nr < 0)
		return 0; /* running, or waiting outside a call: not known */
	return pc < lo || pc >= hi;
}

int ember__inject_unmap(ember__inject *inj)
{
	if (!inj || !inj->page)
		return 0;
	/* the stub's thread is back in its own call: out of the page */
	int out = 0;
	for (int i = 0; i < 50 && !(out = waits_outside(inj->pid, inj->stub_tid, inj->page,
							 inj->page + EMBER_INJ_PAGE_LEN)); i++)
		usleep(2000);
	if (!out)
		return ember__error(EMBER_ERR_INVALID,
				    "process %d: its page of the loader calls stays mapped (thread "
				    "%d was not seen out of it)",
				    (int)inj->pid, (int)inj->stub_tid);
	pid_t tid = 0;
	long nr = -1;
	ember__iregs orig;
	uint64_t pre[6];
	int rc = seize(inj->pid, &tid, &nr, &orig, pre);
	if (rc < 0)
		return rc;
	uint64_t args[6] = {inj->page, EMBER_INJ_PAGE_LEN, 0, 0, 0, 0};
	long ret = remote_syscall(tid, &orig, SYS_munmap, args);
	/* the thread's own call restarts as the kernel would have it, made
	 * explicit: its registers go back at munmap's exit stop, after which
	 * the kernel restarts nothing (an epoll_wait's EINTR at the stop, or
	 * an -ERESTART code, would reach the program) */
	ember__iregs resume = orig;
	ember__iarch_restart(&resume, eintr_call(nr) && ember__iarch_syscall(&orig) == nr, pre[0]);
	(void)ember__iarch_set(tid, &resume);
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
	if (ret != 0)
		return ember__error(EMBER_ERR_INVALID,
				    "process %d: its page of the loader calls stays mapped (munmap: %ld)",
				    (int)inj->pid, ret);
	inj->page = 0;
	return 0;
}
