/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sort_faults.c - what sorting a big module's symbol index costs with
 * glibc's qsort and with ember__sort (util/sort.h), side by side:
 *
 *     ember_bench_sort_faults ELF_FILE [ROUNDS]
 *
 * Reads the function symbols of ELF_FILE (.symtab, else .dynsym) into
 * entries shaped as the symbolizer's index (symbols/symindex.h: 24
 * bytes, address, name, size, rank), then, ROUNDS times (5), in a fresh fork child each, for
 * each sort in turn: copies them into a new array (untimed, as the index
 * build fills its array), sorts it by address, size and rank, and
 * reports the CPU time and page faults of the sort alone. Prints the
 * median of each and their ratio. Judges nothing: docs/BENCHMARKS.md
 * section 13 holds the figures.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/sort.h"
#include "median.h"

typedef struct {
	uint64_t addr;
	const char *name;
	uint32_t size, rank;
} entry;

static int cmp_entry(const void *a, const void *b)
{
	const entry *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if ((x->size == 0) != (y->size == 0))
		return x->size == 0 ? 1 : -1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static entry *read_syms(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(path);
		return NULL;
	}
	const unsigned char *f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f == MAP_FAILED || memcmp(f, ELFMAG, SELFMAG) != 0 || f[EI_CLASS] != ELFCLASS64) {
		fprintf(stderr, "%s: not a 64-bit ELF file\n", path);
		return NULL;
	}
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff), *tab = NULL;
	for (int want = SHT_SYMTAB; want && !tab; want = want == SHT_SYMTAB ? SHT_DYNSYM : 0)
		for (unsigned i = 0; i < eh->e_shnum; i++)
			if (sh[i].sh_type == (unsigned)want) {
				tab = &sh[i];
				break;
			}
	if (!tab || tab->sh_link >= eh->e_shnum) {
		fprintf(stderr, "%s: no symbol table\n", path);
		return NULL;
	}
	const Elf64_Sym *sym = (const Elf64_Sym *)(f + tab->sh_offset);
	const char *str = (const char *)(f + sh[tab->sh_link].sh_offset);
	size_t total = tab->sh_size / sizeof(*sym);
	entry *v = malloc((total ? total : 1) * sizeof(*v));
	if (!v)
		return NULL;
	*n = 0;
	for (size_t i = 1; i < total; i++) {
		int type = ELF64_ST_TYPE(sym[i].st_info), bind = ELF64_ST_BIND(sym[i].st_info);
		if (sym[i].st_shndx == SHN_UNDEF || sym[i].st_shndx == SHN_ABS ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
			continue;
		unsigned rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
		v[(*n)++] = (entry){sym[i].st_value, str + sym[i].st_name,
				    sym[i].st_size > UINT32_MAX ? UINT32_MAX : (uint32_t)sym[i].st_size,
				    type == STT_NOTYPE ? rank + 3 : rank};
	}
	return v;
}

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One sort in a fresh child; its CPU seconds and page faults through a pipe. */
static int measure(const entry *v, size_t n, int ours, double out[2])
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		entry *w = malloc(n * sizeof(*w));
		if (!w)
			_exit(1);
		memcpy(w, v, n * sizeof(*w));
		struct rusage r0, r1;
		getrusage(RUSAGE_SELF, &r0);
		double c0 = cpu_now();
		if (ours)
			ember__sort(w, n, sizeof(*w), cmp_entry);
		else
			qsort(w, n, sizeof(*w), cmp_entry);
		double res[2] = {cpu_now() - c0, 0};
		getrusage(RUSAGE_SELF, &r1);
		res[1] = (double)(r1.ru_minflt - r0.ru_minflt + r1.ru_majflt - r0.ru_majflt);
		for (size_t i = 1; i < n; i++)
			if (cmp_entry(&w[i - 1], &w[i]) > 0)
				_exit(2);
		ssize_t wr = write(p[1], res, sizeof(res));
		_exit(wr == (ssize_t)sizeof(res) ? 0 : 1);
	}
	close(p[1]);
	ssize_t rd = read(p[0], out, 2 * sizeof(double));
	close(p[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	return rd == (ssize_t)(2 * sizeof(double)) && WIFEXITED(status) && WEXITSTATUS(status) == 0
		       ? 0
		       : -1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ember_bench_sort_faults ELF_FILE [ROUNDS]\n");
		return 2;
	}
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	if (rounds < 1 || rounds > 100)
		rounds = 5;
	size_t n = 0;
	entry *v = read_syms(argv[1], &n);
	if (!v)
		return 1;
	double cpu[2][100], flt[2][100];
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < 2; k++) {
			int ours = (k + r) % 2; /* the order alternates */
			double res[2];
			if (measure(v, n, ours, res) != 0) {
				fprintf(stderr, "a measurement failed (or a sort left its array unsorted)\n");
				return 1;
			}
			cpu[ours][r] = res[0];
			flt[ours][r] = res[1];
		}
	double qc = bench_median(cpu[0], rounds), ec = bench_median(cpu[1], rounds);
	double qf = bench_median(flt[0], rounds), ef = bench_median(flt[1], rounds);
	printf("%s: %zu entries of %zu bytes (%.1f MiB), %d rounds, medians\n", argv[1], n,
	       sizeof(entry), (double)(n * sizeof(entry)) / (1 << 20), rounds);
	printf("  qsort        cpu %8.2f ms  faults %7.0f\n", qc * 1e3, qf);
	printf("  ember__sort  cpu %8.2f ms  faults %7.0f  (cpu x%.2f of qsort's)\n", ec * 1e3, ef,
	       qc > 0 ? ec / qc : 0);
	free(v);
	return 0;
}
