/* SPDX-License-Identifier: Apache-2.0 */
/*
 * abrun.c - the paired A/B runner behind bench/overhead.sh: runs one
 * command unprofiled, under emberprof and under gperftools' libprofiler,
 * interleaved, and reports ratios to the unprofiled run of the same round.
 *
 *     ember_bench_abrun --lib LIBEMBERPROF --count COUNT_TOOL
 *                       [--gperf LIBPROFILER] [--rounds N] [--rates R,R...]
 *                       [--hide-debug DIR] [--engines E,E...] [--tsv FILE]
 *                       -- CMD [ARGS...]
 *
 * Configurations: "base" (unprofiled, the reference of each round),
 * "control" (unprofiled again: its ratio to base is the noise floor),
 * "ember@R" (LD_PRELOAD=LIBEMBERPROF EMBERPROF_SAMPLE_RATE=R
 * EMBERPROF_OUTPUT_DIR=<temp dir>) and "gperf@R" (LD_PRELOAD=LIBPROFILER
 * CPUPROFILE=<temp dir>/gperf.prof CPUPROFILE_FREQUENCY=R; the default
 * process-wide ITIMER_PROF, which covers every thread) for each rate.
 * With --engines (e.g. timer,perf) emberprof runs once per engine and rate,
 * as "ember-E@R" with EMBERPROF_ENGINE=E, instead of once as "ember@R"
 * with the default engine (bench/engines.sh).
 * With --hide-debug DIR (e.g. /usr/lib/debug; needs root) one more
 * configuration, "ember-nd@R" for the first rate, runs emberprof with DIR
 * hidden under an empty directory in a private mount namespace, so that
 * no separate debug information is found: it shows what the symbolizer's
 * loading of, say, libc6-dbg's DWARF costs in memory and CPU. Each
 * round runs every configuration once, starting one further along the list
 * than the round before, so no configuration always runs first or last.
 *
 * For each run the child's CPU time (user + sys of the whole process, all
 * threads, the profiler's own thread included) and max RSS come from
 * wait4(), its wall time from CLOCK_MONOTONIC around fork..wait4. After a
 * profiled run the samples in its profiles are summed by COUNT_TOOL
 * (count_samples.c); "expected" is the run's CPU seconds times the rate.
 * The command's stdout must be identical in every run (the workload prints
 * a checksum), so profiled and unprofiled runs provably did the same work.
 *
 * Each summary line gives, per configuration, the median of the per-round
 * values and their min..max: CPU and wall ratios to base, the CPU time
 * added to base (ms: useful with a short command, where the profiler's
 * fixed start and stop costs dominate), delivered/expected samples, for
 * emberprof the weighted sample time over the CPU time, and max RSS. This is a benchmark: it judges nothing and
 * exits 0 unless a run fails.
 *
 * The runner links nothing but libc, so that its own resident set (which
 * a forked child starts with, and which ru_maxrss therefore cannot go
 * below) stays small; it prints it at the end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONFIGS 16
#define MAX_ROUNDS 64
#define MAX_RATES 4

enum kind { KIND_NONE, KIND_EMBER, KIND_GPERF };

typedef struct config {
	char name[32];
	enum kind kind;
	unsigned rate;
	int hide_debug; /* run with --hide-debug's directory hidden */
	char engine[16]; /* EMBERPROF_ENGINE for this run, "" for the default */
} config;

typedef struct run_result {
	double cpu_s, wall_s;
	long maxrss_kib;
	long long signals;     /* -1: not a profiled run or not counted */
	long long weighted_ns; /* emberprof only, else -1 */
} run_result;

typedef struct options {
	const char *lib, *gperf, *count, *tsv, *hide;
	int rounds;
	unsigned rates[MAX_RATES];
	int nrates;
	char engines[4][16];
	int nengines;
	char **cmd;
} options;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "ember_bench_abrun: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(1);
}

/* ---- running one configuration ---- */

/*
 * In a private mount namespace, mounts the empty directory `empty` over
 * `hide` (e.g. /usr/lib/debug, so that no separate debug information is
 * found). Needs CAP_SYS_ADMIN. 0 or -1 with errno.
 */
static int hide_dir(const char *hide, const char *empty)
{
	if (unshare(CLONE_NEWNS) != 0)
		return -1;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return -1;
	return mount(empty, hide, NULL, MS_BIND, NULL);
}

static void child_exec(const options *o, const config *c, const char *dir)
{
	char path[600], rate[16];
	unsetenv("LD_PRELOAD");
	unsetenv("CPUPROFILE");
	unsetenv("CPUPROFILE_FREQUENCY");
	unsetenv("EMBERPROF_OUTPUT_DIR");
	unsetenv("EMBERPROF_SAMPLE_RATE");
	unsetenv("EMBERPROF_AUTOSTART");
	unsetenv("EMBERPROF_ENGINE");
	if (c->hide_debug) {
		snprintf(path, sizeof(path), "%s/empty", dir);
		if (hide_dir(o->hide, path) != 0) {
			fprintf(stderr, "ember_bench_abrun: cannot hide %s: %s\n", o->hide, strerror(errno));
			_exit(125);
		}
	}
	snprintf(rate, sizeof(rate), "%u", c->rate);
	if (c->kind == KIND_EMBER) {
		setenv("LD_PRELOAD", o->lib, 1);
		setenv("EMBERPROF_OUTPUT_DIR", dir, 1);
		setenv("EMBERPROF_SAMPLE_RATE", rate, 1);
		if (c->engine[0])
			setenv("EMBERPROF_ENGINE", c->engine, 1);
	} else if (c->kind == KIND_GPERF) {
		snprintf(path, sizeof(path), "%s/gperf.prof", dir);
		setenv("LD_PRELOAD", o->gperf, 1);
		setenv("CPUPROFILE", path, 1);
		setenv("CPUPROFILE_FREQUENCY", rate, 1);
	}
	snprintf(path, sizeof(path), "%s/stdout", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || dup2(fd, 1) < 0)
		_exit(126);
	execvp(o->cmd[0], o->cmd);
	fprintf(stderr, "ember_bench_abrun: cannot run %s: %s\n", o->cmd[0], strerror(errno));
	_exit(127);
}

/* Runs `argv` and parses "signals N <word> M" from its stdout. */
static int run_counter(char **argv, long long *signals, long long *second)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	char buf[256];
	size_t n = 0;
	ssize_t k;
	while (n < sizeof(buf) - 1 && (k = read(p[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = '\0';
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	char word[32];
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
	    sscanf(buf, "signals %lld %31s %lld", signals, word, second) != 3)
		return -1;
	return 0;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcmp(s + a - b, suf);
}

/* Sums the samples a profiled run left in `dir`. */
static void count_samples(const options *o, const config *c, const char *dir, run_result *r)
{
	char *argv[64];
	char paths[60][600];
	int n = 0;
	argv[n++] = (char *)o->count;
	if (c->kind == KIND_GPERF) {
		argv[n++] = "gperf";
		snprintf(paths[0], sizeof(paths[0]), "%s/gperf.prof", dir);
		argv[n++] = paths[0];
	} else {
		argv[n++] = "pprof";
		DIR *d = opendir(dir);
		struct dirent *de;
		int np = 0;
		while (d && (de = readdir(d)) && np < 60) {
			if (!has_suffix(de->d_name, ".pb.gz"))
				continue;
			snprintf(paths[np], sizeof(paths[np]), "%s/%s", dir, de->d_name);
			argv[n++] = paths[np++];
		}
		if (d)
			closedir(d);
		if (np == 0) {
			fprintf(stderr, "ember_bench_abrun: %s wrote no profile\n", c->name);
			return;
		}
	}
	argv[n] = NULL;
	long long second = -1;
	if (run_counter(argv, &r->signals, &second) != 0) {
		fprintf(stderr, "ember_bench_abrun: counting the samples of %s failed\n", c->name);
		r->signals = -1;
		return;
	}
	if (c->kind == KIND_EMBER)
		r->weighted_ns = second;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[600];
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (unlink(path) != 0)
				rmdir(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

static void read_stdout(const char *dir, char *out, size_t len)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/stdout", dir);
	FILE *f = fopen(path, "r");
	out[0] = '\0';
	if (f) {
		size_t n = fread(out, 1, len - 1, f);
		out[n] = '\0';
		fclose(f);
	}
}

static void run_one(const options *o, const config *c, run_result *r, char *expect_stdout,
		    size_t expect_len)
{
	const char *tmp = getenv("TMPDIR");
	char dir[256];
	if (snprintf(dir, sizeof(dir), "%s/ember-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
	    (int)sizeof(dir))
		die("TMPDIR is too long: %s", tmp);
	if (!mkdtemp(dir))
		die("mkdtemp: %s", strerror(errno));
	if (c->hide_debug) {
		char empty[300];
		snprintf(empty, sizeof(empty), "%s/empty", dir);
		if (mkdir(empty, 0700) != 0)
			die("mkdir: %s", strerror(errno));
	}
	fflush(NULL);
	double t0 = now_s();
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0)
		child_exec(o, c, dir);
	int st;
	struct rusage ru;
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR)
			die("wait4: %s", strerror(errno));
	double t1 = now_s();
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "ember_bench_abrun: %s run failed (status 0x%x)\n", c->name, st);
		remove_dir(dir);
		exit(1);
	}
	memset(r, 0, sizeof(*r));
	r->wall_s = t1 - t0;
	r->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		   (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	r->maxrss_kib = ru.ru_maxrss;
	r->signals = -1;
	r->weighted_ns = -1;

	char out[512];
	read_stdout(dir, out, sizeof(out));
	if (!expect_stdout[0])
		snprintf(expect_stdout, expect_len, "%s", out);
	else if (strcmp(expect_stdout, out)) {
		remove_dir(dir);
		die("%s run printed something else than the first run: the work differed", c->name);
	}
	if (c->kind != KIND_NONE)
		count_samples(o, c, dir, r);
	remove_dir(dir);
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

typedef struct spread {
	double med, min, max;
	int n;
} spread;

static spread stats(const double *v, int n)
{
	spread s = {0, 0, 0, n};
	if (n == 0)
		return s;
	double t[MAX_ROUNDS];
	memcpy(t, v, (size_t)n * sizeof(*v));
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	s.min = t[0];
	s.max = t[n - 1];
	s.med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	return s;
}

static void print_spread(const char *fmt, spread s)
{
	char buf[96];
	if (s.n == 0) {
		printf(" %-23s", "-");
		return;
	}
	char a[24], b[24], c[24];
	snprintf(a, sizeof(a), fmt, s.med);
	snprintf(b, sizeof(b), fmt, s.min);
	snprintf(c, sizeof(c), fmt, s.max);
	snprintf(buf, sizeof(buf), "%s [%s..%s]", a, b, c);
	printf(" %-23s", buf);
}

static void summarize(const config *cfg, int ncfg, run_result res[][MAX_CONFIGS], int rounds)
{
	printf("\nSummary over %d rounds (median [min..max] of the per-round values; ratios are "
	       "to the round's unprofiled 'base' run)\n",
	       rounds);
	printf("%-17s %-23s %-23s %-23s %-23s %-23s %-23s %s\n", "config", "CPU ratio",
	       "added CPU ms", "wall ratio", "delivered/expected", "weighted/CPU", "max RSS MiB",
	       "added RSS MiB");
	for (int c = 0; c < ncfg; c++) {
		double cpu[MAX_ROUNDS], dcpu[MAX_ROUNDS], wall[MAX_ROUNDS], del[MAX_ROUNDS], wt[MAX_ROUNDS];
		double rss[MAX_ROUNDS], drss[MAX_ROUNDS];
		int ncpu = 0, ndel = 0, nwt = 0;
		for (int r = 0; r < rounds; r++) {
			const run_result *x = &res[r][c], *b = &res[r][0];
			rss[r] = (double)x->maxrss_kib / 1024.0;
			drss[r] = (double)(x->maxrss_kib - b->maxrss_kib) / 1024.0;
			if (c > 0) {
				cpu[ncpu] = x->cpu_s / b->cpu_s;
				dcpu[ncpu] = (x->cpu_s - b->cpu_s) * 1000.0;
				wall[ncpu++] = x->wall_s / b->wall_s;
			}
			if (cfg[c].kind != KIND_NONE && x->signals >= 0)
				del[ndel++] = (double)x->signals / (x->cpu_s * cfg[c].rate);
			if (cfg[c].kind == KIND_EMBER && x->weighted_ns >= 0)
				wt[nwt++] = (double)x->weighted_ns * 1e-9 / x->cpu_s;
		}
		printf("%-17s", cfg[c].name);
		print_spread("%.3f", stats(cpu, ncpu));
		print_spread("%.0f", stats(dcpu, ncpu));
		print_spread("%.3f", stats(wall, ncpu));
		print_spread("%.2f", stats(del, ndel));
		print_spread("%.2f", stats(wt, nwt));
		print_spread("%.1f", stats(rss, rounds));
		print_spread("%.2f", stats(drss, c > 0 ? rounds : 0));
		printf("\n");
	}
	double bcpu[MAX_ROUNDS], bwall[MAX_ROUNDS];
	for (int r = 0; r < rounds; r++) {
		bcpu[r] = res[r][0].cpu_s;
		bwall[r] = res[r][0].wall_s;
	}
	spread sc = stats(bcpu, rounds), sw = stats(bwall, rounds);
	printf("base run: CPU %.2f s [%.2f..%.2f], wall %.2f s [%.2f..%.2f]\n", sc.med, sc.min, sc.max,
	       sw.med, sw.min, sw.max);
}

/* ---- main ---- */

static void usage(void)
{
	fprintf(stderr, "usage: ember_bench_abrun --lib LIBEMBERPROF --count COUNT_TOOL "
			"[--gperf LIBPROFILER] [--rounds N] [--rates R,R...] [--hide-debug DIR] "
			"[--engines E,E...] [--tsv FILE] "
			"-- CMD [ARGS...]\n");
	exit(2);
}

static void parse_rates(options *o, const char *s)
{
	char *copy = strdup(s), *save = NULL;
	o->nrates = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(t, &end, 10);
		if (*end || v < 1 || v > 10000 || o->nrates == MAX_RATES)
			die("bad --rates %s (at most 4 rates, each 1..10000)", s);
		o->rates[o->nrates++] = (unsigned)v;
	}
	free(copy);
	if (o->nrates == 0)
		die("bad --rates %s", s);
}

/* Whether hide_dir() works here: tried in a throw-away child. */
static int hide_works(const char *hide)
{
	pid_t pid = fork();
	if (pid < 0)
		return 0;
	if (pid == 0)
		_exit(hide_dir(hide, "/") == 0 ? 0 : 1);
	int st;
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void parse_args(options *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	o->rounds = 5;
	o->rates[0] = 100;
	o->rates[1] = 1000;
	o->nrates = 2;
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (i + 1 >= argc)
			usage();
		if (!strcmp(a, "--lib"))
			o->lib = argv[++i];
		else if (!strcmp(a, "--gperf"))
			o->gperf = argv[++i];
		else if (!strcmp(a, "--count"))
			o->count = argv[++i];
		else if (!strcmp(a, "--hide-debug"))
			o->hide = argv[++i];
		else if (!strcmp(a, "--tsv"))
			o->tsv = argv[++i];
		else if (!strcmp(a, "--rounds")) {
			o->rounds = atoi(argv[++i]);
			if (o->rounds < 1 || o->rounds > MAX_ROUNDS)
				die("--rounds must be 1..64, got %s", argv[i]);
		}
		else if (!strcmp(a, "--rates"))
			parse_rates(o, argv[++i]);
		else if (!strcmp(a, "--engines")) {
			char *copy = strdup(argv[++i]), *save = NULL;
			for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (o->nengines == 4 || strlen(t) >= sizeof(o->engines[0]))
					die("bad --engines %s (at most 4 names)", argv[i]);
				snprintf(o->engines[o->nengines++], sizeof(o->engines[0]), "%s", t);
			}
			free(copy);
		}
		else
			usage();
	}
	if (i >= argc || !o->lib || !o->count)
		usage();
	if (access(o->lib, R_OK) != 0)
		die("cannot read %s", o->lib);
	if (access(o->count, X_OK) != 0)
		die("cannot run %s", o->count);
	if (o->gperf && access(o->gperf, R_OK) != 0) {
		fprintf(stderr, "ember_bench_abrun: %s not found; skipping gperftools\n", o->gperf);
		o->gperf = NULL;
	}
	o->cmd = argv + i;
	if (o->hide && !hide_works(o->hide)) {
		fprintf(stderr, "ember_bench_abrun: cannot hide %s (needs root and mount namespaces); "
				"skipping the ember-nd configuration\n", o->hide);
		o->hide = NULL;
	}
}

int main(int argc, char **argv)
{
	options o;
	parse_args(&o, argc, argv);

	config cfg[MAX_CONFIGS];
	int ncfg = 0;
	cfg[ncfg++] = (config){"base", KIND_NONE, 0, 0, ""};
	cfg[ncfg++] = (config){"control", KIND_NONE, 0, 0, ""};
	for (int k = 0; k < o.nrates; k++) {
		for (int e = 0; e < (o.nengines ? o.nengines : 1) && ncfg < MAX_CONFIGS - 2; e++) {
			cfg[ncfg] = (config){"", KIND_EMBER, o.rates[k], 0, ""};
			if (o.nengines) {
				snprintf(cfg[ncfg].engine, sizeof(cfg[ncfg].engine), "%s", o.engines[e]);
				snprintf(cfg[ncfg].name, sizeof(cfg[ncfg].name), "ember-%s@%u", o.engines[e],
					 o.rates[k]);
			} else {
				snprintf(cfg[ncfg].name, sizeof(cfg[ncfg].name), "ember@%u", o.rates[k]);
			}
			ncfg++;
		}
		if (o.gperf) {
			cfg[ncfg] = (config){"", KIND_GPERF, o.rates[k], 0, ""};
			snprintf(cfg[ncfg].name, sizeof(cfg[ncfg].name), "gperf@%u", o.rates[k]);
			ncfg++;
		}
	}
	if (o.hide) {
		cfg[ncfg] = (config){"", KIND_EMBER, o.rates[0], 1, ""};
		snprintf(cfg[ncfg].name, sizeof(cfg[ncfg].name), "ember-nd@%u", o.rates[0]);
		ncfg++;
	}

	FILE *tsv = NULL;
	if (o.tsv) {
		tsv = fopen(o.tsv, "w");
		if (!tsv)
			die("cannot write %s", o.tsv);
		fprintf(tsv, "round\tconfig\tcpu_s\twall_s\tmaxrss_kib\tsignals\tweighted_ns\n");
	}

	static run_result res[MAX_ROUNDS][MAX_CONFIGS];
	char expect[512] = "";
	for (int r = 0; r < o.rounds; r++) {
		for (int k = 0; k < ncfg; k++) {
			int c = (r + k) % ncfg;
			run_result *x = &res[r][c];
			run_one(&o, &cfg[c], x, expect, sizeof(expect));
			printf("round %d/%d %-17s cpu %7.3f s  wall %7.3f s  maxrss %6ld KiB", r + 1,
			       o.rounds, cfg[c].name, x->cpu_s, x->wall_s, x->maxrss_kib);
			if (x->signals >= 0)
				printf("  signals %6lld (%.2fx of cpu*rate)", x->signals,
				       (double)x->signals / (x->cpu_s * cfg[c].rate));
			if (x->weighted_ns >= 0)
				printf("  weighted %.2fx", (double)x->weighted_ns * 1e-9 / x->cpu_s);
			printf("\n");
			fflush(stdout);
			if (tsv)
				fprintf(tsv, "%d\t%s\t%.4f\t%.4f\t%ld\t%lld\t%lld\n", r + 1, cfg[c].name,
					x->cpu_s, x->wall_s, x->maxrss_kib, x->signals, x->weighted_ns);
		}
	}
	if (tsv)
		fclose(tsv);
	summarize(cfg, ncfg, res, o.rounds);
	struct rusage self;
	getrusage(RUSAGE_SELF, &self);
	printf("runner's own max RSS: %.1f MiB (a child's ru_maxrss includes what it had before "
	       "exec, so it cannot be lower)\n",
	       (double)self.ru_maxrss / 1024.0);
	return 0;
}
