/* SPDX-License-Identifier: Apache-2.0 */
/*
 * program.c - finding what `emberprof run` needs before it starts
 * anything: the program (looked up in PATH like execvp, then checked to be
 * something LD_PRELOAD can load into) and libemberprof.so itself, and the
 * new LD_PRELOAD value.
 *
 * The ELF check reads only the file header and the program headers: a
 * program without PT_INTERP is statically linked (or static-pie), the
 * dynamic loader never runs for it and LD_PRELOAD is silently ignored, so
 * it is refused with an explanation instead of producing empty profiles.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "emberprof.h"
#include "preload/preload_env.h"
#include "util/error.h"

#if defined(__x86_64__)
#define NATIVE_MACHINE EM_X86_64
#define NATIVE_ARCH "x86-64"
#elif defined(__aarch64__)
#define NATIVE_MACHINE EM_AARCH64
#define NATIVE_ARCH "aarch64"
#else
#define NATIVE_MACHINE EM_NONE /* unknown: the machine is not checked */
#define NATIVE_ARCH "this machine"
#endif

#if UINTPTR_MAX == 0xffffffffffffffffu
#define NATIVE_CLASS ELFCLASS64
typedef Elf64_Ehdr native_ehdr;
typedef Elf64_Phdr native_phdr;
#else
#define NATIVE_CLASS ELFCLASS32
typedef Elf32_Ehdr native_ehdr;
typedef Elf32_Phdr native_phdr;
#endif

/* ---- the program ---- */

static int oom(const char *what)
{
	ember__error_oom(what);
	return EMBER_EXIT_INTERNAL;
}

static int full_read(int fd, void *buf, size_t n, off_t off)
{
	ssize_t r = pread(fd, buf, n, off);
	return r == (ssize_t)n ? 0 : -1;
}

/* Checks an ELF file already open on fd. */
static int check_elf(int fd, const char *path)
{
	native_ehdr eh;
	if (full_read(fd, &eh, sizeof(eh), 0) < 0)
		return ember__error(EMBER_EXIT_NOEXEC, "'%s' is a truncated ELF file", path);
	if (eh.e_ident[EI_CLASS] != NATIVE_CLASS)
		return ember__error(EMBER_EXIT_NOEXEC,
				    "'%s' is a %s-bit program; emberprof can only load into %s-bit "
				    "programs",
				    path, eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32" : "64",
				    NATIVE_CLASS == ELFCLASS64 ? "64" : "32");
	if (NATIVE_MACHINE != EM_NONE && eh.e_machine != NATIVE_MACHINE)
		return ember__error(EMBER_EXIT_NOEXEC,
				    "'%s' is built for another architecture (ELF machine %u), not %s",
				    path, (unsigned)eh.e_machine, NATIVE_ARCH);
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return ember__error(EMBER_EXIT_NOEXEC, "'%s' is an ELF file but not a program", path);
	if (eh.e_phentsize != sizeof(native_phdr) || eh.e_phnum == 0 || eh.e_phnum == PN_XNUM)
		return ember__error(EMBER_EXIT_NOEXEC, "'%s' has unreadable ELF program headers",
				    path);
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		native_phdr ph;
		if (full_read(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) < 0)
			return ember__error(EMBER_EXIT_NOEXEC,
					    "'%s' has truncated ELF program headers", path);
		if (ph.p_type == PT_INTERP)
			return 0;
	}
	return ember__error(EMBER_EXIT_NOEXEC,
			    "'%s' is statically linked (it has no program interpreter), so "
			    "LD_PRELOAD cannot load emberprof into it; link it dynamically, or link "
			    "libemberprof into it and start the agent with the API",
			    path);
}

int ember__cli_check_executable(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return ember__error_errno(errno == ENOENT ? EMBER_EXIT_NOTFOUND : EMBER_EXIT_NOEXEC,
					  errno, "cannot run '%s'", path);
	if (!S_ISREG(st.st_mode))
		return ember__error(EMBER_EXIT_NOEXEC, "cannot run '%s': not a regular file", path);
	if (access(path, X_OK) < 0)
		return ember__error_errno(EMBER_EXIT_NOEXEC, errno, "cannot run '%s'", path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ember__error_errno(EMBER_EXIT_NOEXEC, errno, "cannot read '%s'", path);
	unsigned char magic[4] = { 0 };
	ssize_t n = pread(fd, magic, sizeof(magic), 0);
	int rc;
	if (n >= 2 && magic[0] == '#' && magic[1] == '!')
		rc = 0; /* a script: its interpreter is what gets profiled */
	else if (n == 4 && memcmp(magic, ELFMAG, SELFMAG) == 0)
		rc = check_elf(fd, path);
	else
		rc = ember__error(EMBER_EXIT_NOEXEC,
				  "'%s' is neither an ELF program nor a script starting with #!", path);
	close(fd);
	return rc;
}

/* Joins dir and name into a malloc'd "dir/name" ("name" for an empty dir). */
static char *join(const char *dir, size_t ndir, const char *name)
{
	size_t nname = strlen(name);
	char *s = malloc(ndir + nname + 2);
	if (!s)
		return NULL;
	if (ndir == 0) {
		memcpy(s, name, nname + 1);
		return s;
	}
	memcpy(s, dir, ndir);
	s[ndir] = '/';
	memcpy(s + ndir + 1, name, nname + 1);
	return s;
}

int ember__cli_find_program(const char *cmd, char **out_path)
{
	*out_path = NULL;
	if (!*cmd)
		return ember__error(EMBER_EXIT_NOTFOUND, "the program name is empty");
	if (strchr(cmd, '/')) {
		int rc = ember__cli_check_executable(cmd);
		if (rc)
			return rc;
		*out_path = strdup(cmd);
		return *out_path ? 0 : oom("program path");
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	/* Like execvp: the first executable match wins; remember why others failed. */
	for (const char *p = path;; p++) {
		size_t n = strcspn(p, ":");
		char *cand = join(p, n, cmd);
		if (!cand)
			return oom("program path");
		struct stat st;
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0) {
			int rc = ember__cli_check_executable(cand);
			if (rc) {
				free(cand);
				return rc;
			}
			*out_path = cand;
			return 0;
		}
		free(cand);
		p += n;
		if (!*p)
			break;
	}
	return ember__error(EMBER_EXIT_NOTFOUND, "program '%s' not found in PATH", cmd);
}

/* ---- the library ---- */

static int usable_library(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

/* Makes the found library path absolute and LD_PRELOAD-safe. */
static int finish_library(const char *found, char **out)
{
	char *abs = realpath(found, NULL);
	if (!abs)
		return ember__error_errno(EMBER_EXIT_INTERNAL, errno, "cannot resolve '%s'", found);
	if (strpbrk(abs, " :")) {
		int rc = ember__error(EMBER_EXIT_INTERNAL,
				      "the path of the library '%s' contains a space or a colon, "
				      "which LD_PRELOAD cannot express; move it or set EMBERPROF_LIB",
				      abs);
		free(abs);
		return rc;
	}
	*out = abs;
	return 0;
}

/* Looks in `dir` (ending in '/') for `name` with its SONAME version
 * (libemberprof.so.0: what a runtime package such as Debian's ships) or
 * without (the development symlink); 1 and *out set if found. */
static int find_in_dir(const char *dir, const char *name, char **out, int *rc)
{
	static const char *const suffix[] = {
#ifdef EMBER_LIB_SOVERSION
		"." EMBER_LIB_SOVERSION,
#endif
		"" };
	for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		char cand[PATH_MAX + 128];
		snprintf(cand, sizeof(cand), "%s%s%s", dir, name, suffix[i]);
		if (usable_library(cand)) {
			*rc = finish_library(cand, out);
			return 1;
		}
	}
	return 0;
}

/* Looks for the library file `name` in the places ember__cli_find_library
 * lists; 1 and *out set if found (or on an error, which it reports). */
static int find_named(const char *name, char **out, int *rc)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		/* The build tree; an installed prefix (its libdir relative to
		 * bindir, e.g. ../lib/x86_64-linux-gnu, so a moved prefix works);
		 * ../lib. */
		static const char *const rel[] = {
			"/",
#ifdef EMBER_REL_LIBDIR
			"/" EMBER_REL_LIBDIR "/",
#endif
			"/../lib/" };
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			char dir[PATH_MAX + 64];
			snprintf(dir, sizeof(dir), "%s%s", exe, rel[i]);
			if (find_in_dir(dir, name, out, rc))
				return 1;
		}
	}
#ifdef EMBER_INSTALL_LIBDIR
	if (find_in_dir(EMBER_INSTALL_LIBDIR "/", name, out, rc))
		return 1;
#endif
	return 0;
}

int ember__cli_find_library(int alloc_hook, char **out)
{
	*out = NULL;
	const char *env = getenv("EMBERPROF_LIB");
	if (env && *env) {
		if (!usable_library(env))
			return ember__error(EMBER_EXIT_USAGE,
					    "EMBERPROF_LIB=\"%s\" is not a readable file", env);
		return finish_library(env, out);
	}
	int rc = 0;
	if (!alloc_hook && find_named(EMBER_PRELOAD_NOALLOC_LIBNAME, out, &rc))
		return rc;
	if (find_named(EMBER_PRELOAD_LIBNAME, out, &rc))
		return rc;
	return ember__error(EMBER_EXIT_INTERNAL,
			    "cannot find " EMBER_PRELOAD_LIBNAME " next to the emberprof executable, "
			    "in the libdir of its prefix or in ../lib; set EMBERPROF_LIB to its path");
}

/* Is the LD_PRELOAD entry [s, s+n) a sanitizer runtime (which must stay first)? */
static int is_sanitizer_runtime(const char *s, size_t n)
{
	static const char *const prefixes[] = { "libasan", "libtsan", "libubsan", "liblsan",
						"libclang_rt." };
	const char *base = s;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/')
			base = s + i + 1;
	size_t nbase = n - (size_t)(base - s);
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t np = strlen(prefixes[i]);
		if (nbase >= np && memcmp(base, prefixes[i], np) == 0)
			return 1;
	}
	return 0;
}

char *ember__cli_ld_preload_with(const char *old, const char *lib)
{
	if (!old)
		old = "";
	size_t nold = strlen(old), nlib = strlen(lib);
	char *s = malloc(nold + nlib + 3);
	if (!s)
		return NULL;
	/* Keep leading sanitizer runtimes in front. */
	const char *p = old;
	size_t keep = 0;
	for (;;) {
		const char *tok = p + strspn(p, " :");
		size_t n = strcspn(tok, " :");
		if (n == 0 || !is_sanitizer_runtime(tok, n))
			break;
		p = tok + n;
		keep = (size_t)(p - old);
	}
	const char *rest = old + keep;
	rest += strspn(rest, " :");
	size_t len = 0;
	memcpy(s, old, keep);
	len = keep;
	if (keep)
		s[len++] = ':';
	memcpy(s + len, lib, nlib);
	len += nlib;
	if (*rest) {
		s[len++] = ':';
		size_t nrest = strlen(rest);
		memcpy(s + len, rest, nrest);
		len += nrest;
	}
	s[len] = '\0';
	return s;
}
