/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h - the pieces of the `emberprof` command-line tool, shared between
 * its files: main.c (dispatch, usage, messages), run.c (`emberprof run`),
 * program.c (finding and checking the program and libemberprof.so),
 * spawn.c (starting the program, forwarding signals, waiting), outdir.c
 * (the output directory and the profiles in it) and top_cmd.c
 * (`emberprof top` and the table printed after `run`).
 *
 * Functions that can fail return 0 or a negative ember_err and leave a
 * message in ember_last_error(); the caller prints it with
 * ember__cli_error(). Nothing here runs in a signal handler except the
 * forwarding handler in spawn.c, which only calls kill().
 */
#ifndef EMBER_CLI_H
#define EMBER_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit codes of the tool itself (a program's own status passes through). */
#define EMBER_EXIT_USAGE 2      /* bad option, argument or EMBERPROF_* variable */
#define EMBER_EXIT_INTERNAL 125 /* emberprof itself failed (fork, memory, ...) */
#define EMBER_EXIT_NOEXEC 126   /* the program exists but cannot be run under emberprof */
#define EMBER_EXIT_NOTFOUND 127 /* the program was not found */

/* ---- main.c ---- */

/* Prints "emberprof: <formatted message>\n" to stderr. */
void ember__cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Parses a whole decimal number in [min, max] from `s` into *out.
 * Returns 0 or -1 (no message).
 */
/* Whether argv's `arg` is option `name`, alone or (long options) as
 * "--name=VALUE". */
int ember__cli_is_opt(const char *arg, const char *name);

/* The value of option `name` at argv[*i]: after '=' in "--name=VALUE", else
 * the next argument (*i advanced). NULL, with "CMD: option NAME needs a
 * value" on stderr, when there is none. */
const char *ember__cli_opt_value(const char *cmd, int argc, char **argv, int *i,
				 const char *name);

int ember__cli_parse_count(const char *s, unsigned long min, unsigned long max,
			   unsigned long *out);

/* ---- run.c ---- */

/* `emberprof run ...`; argv[0] is "run". Returns the process exit code. */
int ember__cli_run(int argc, char **argv);
void ember__cli_run_usage(FILE *out);

/*
 * run's options (all but CMD), shared with `emberprof attach`: parsed,
 * exported as EMBERPROF_* variables and checked by the library's parser
 * exactly as run does. `name` prefixes the messages, usage() is the
 * command's help (--help, or after an unknown option).
 */
typedef struct ember__cli_opts ember__cli_opts;
struct ember__cli_summary;
/* -1 to go on (*out, the caller's: ember__cli_opts_free; *first: the
 * index in argv of the first argument that is not an option, or argc),
 * else the exit code to return (0 after --help; the error printed). */
int ember__cli_opts_parse(const char *name, void (*usage)(FILE *), int argc, char **argv,
			  ember__cli_opts **out, int *first);
/* Exports the options (`app` the default application name), validates
 * the environment, warns of unknown EMBERPROF_* variables and picks the
 * output directory: *dir malloc'd (EMBERPROF_OUTPUT_DIR), or NULL when
 * profiles go to a Pyroscope server only. *alloc_hook: allocation
 * profiling asked for, with emberprof's malloc. 0 or the exit code
 * (printed). */
int ember__cli_opts_setup(ember__cli_opts *o, const char *app, char **dir, int *alloc_hook);
/* The summary's options: --top, --quiet, --flame, following children. */
void ember__cli_opts_summary(const ember__cli_opts *o, struct ember__cli_summary *s);
/* --log-level info or debug */
int ember__cli_opts_verbose(void);
void ember__cli_opts_free(ember__cli_opts *o);

/* ---- symbolize_cmd.c ---- */

/* `emberprof symbolize ...`; argv[0] is "symbolize". The exit code. */
int ember__cli_symbolize(int argc, char **argv);
void ember__cli_symbolize_usage(FILE *out);

/*
 * `run`'s pass when debuginfod is configured (DEBUGINFOD_URLS, or run
 * --debuginfod): names the pprof profiles in `dir` not in `before` and
 * the JFR recordings not in `jfr_before` (the files the run wrote), in
 * place, after the program has exited. `lines` is
 * EMBERPROF_LINES (NULL: app). Bounded: EMBERPROF_DEBUGINFOD_TIMEOUT
 * seconds (30) for all fetches, failures remembered; says on
 * stderr what could not be fetched. 0, or -1 if a file could not be
 * rewritten (said).
 */
struct ember__cli_names;
int ember__cli_symbolize_new_files(const char *dir, const struct ember__cli_names *before,
				   const struct ember__cli_names *jfr_before, const char *lines,
				   int quiet);

/* The environment variable `var` as a count of unit_ms (1000: seconds)
 * in min..max, in ms: deflt_ms when unset, or when invalid (said). */
int64_t ember__cli_debuginfod_ms(const char *var, int64_t deflt_ms, int64_t unit_ms,
				 unsigned long min, unsigned long max);

/*
 * Names during a tree-engine run (docs/design/debuginfod.md, "Per
 * window"): when debuginfod is configured and the run symbolizes, the
 * debug files of the modules a window's profile has unnamed locations in
 * are fetched in the background, each profile held for them at most
 * EMBERPROF_DEBUGINFOD_WAIT ms (2000), and the engine's symbolizers use
 * them once they are there. NULL in *out when not configured (or the
 * client cannot load: said). ember__cli_tree_names_end says what could
 * not be fetched and frees it (NULL ignored). Main thread only.
 */
typedef struct ember__cli_tree_names ember__cli_tree_names;
struct ember__tree;
int ember__cli_tree_names_new(ember__cli_tree_names **out, struct ember__tree *t, int lines,
			      int verbose);
void ember__cli_tree_names_end(ember__cli_tree_names *n, struct ember__tree *t);

/* ---- top_cmd.c ---- */

/* `emberprof top ...`; argv[0] is "top". Returns the process exit code. */
int ember__cli_top(int argc, char **argv);
void ember__cli_top_usage(FILE *out);

/*
 * Reads a profile file: pprof (gzip'd or not), or a JFR recording
 * (tools/read/jfr_profile.h), told apart by its first bytes. *out is the
 * caller's. 0 or a negative ember_err with a message.
 */
struct ember__profile;
int ember__cli_read_profile(const char *path, struct ember__profile **out);
/* The same, with the file's name always in the error message. */
int ember__cli_read_profile_named(const char *path, struct ember__profile **out);

/*
 * Reads every file in paths[0..npaths) (pprof or JFR), accumulates the sample value named
 * by `index_spec` (a 0-based number or a sample type name such as "cpu";
 * NULL means the profile's default sample type, else its last) and prints
 * the top `n` rows to `out`. With `skip_bad`, unreadable files are
 * reported on stderr and skipped; without it the first one fails the call.
 * Returns 0, or a negative ember_err with a message naming the file.
 * *nread (if not NULL) receives the number of profiles added.
 */
int ember__cli_print_top(char *const *paths, size_t npaths, const char *index_spec, size_t n,
			 FILE *out, int skip_bad, size_t *nread);

/* The same, followed by the share of the samples without a function name
 * per module and what would name them (missing_names.c), if 1% or more;
 * `what` names the value there ("cpu"). */
int ember__cli_print_top_names(char *const *paths, size_t npaths, const char *index_spec,
			       size_t n, FILE *out, int skip_bad, size_t *nread, const char *what);

/* ---- missing_names.c ---- */

struct ember__unnamed;
/* The share of u's samples without a function name, per module, and what
 * would name them (debug packages, DEBUGINFOD_URLS, emberprof symbolize):
 * a few lines, nothing under 1%. May run dpkg-query (bounded, 3 s). */
void ember__cli_print_missing_names(const struct ember__unnamed *u, const char *what, FILE *out);
/* `emberprof version`'s lines on which sources of names this machine has. */
void ember__cli_print_name_sources(FILE *out);

/* ---- flame_cmd.c ---- */

/* `emberprof flame ...` and `emberprof diff ...`; argv[0] is the command.
 * Return the process exit code. */
int ember__cli_flame(int argc, char **argv);
void ember__cli_flame_usage(FILE *out);
int ember__cli_diff(int argc, char **argv);
void ember__cli_diff_usage(FILE *out);

/*
 * For `run --flame`: writes flame.html (the cpu samples of paths), and
 * wall.html and alloc.html where those sample types are present, into dir
 * and prints their paths on stderr. Errors are printed, not returned.
 */
void ember__cli_run_flames(const char *dir, char *const *paths, size_t n);

/* ---- convert_cmd.c ---- */

/* `emberprof convert ...`; argv[0] is "convert". Returns the exit code. */
int ember__cli_convert(int argc, char **argv);
void ember__cli_convert_usage(FILE *out);

/* ---- longpolls_cmd.c ---- */

/* `emberprof longpolls ...`; argv[0] is "longpolls". Returns the exit code. */
int ember__cli_longpolls(int argc, char **argv);
void ember__cli_longpolls_usage(FILE *out);

/* ---- attach_cmd.c ---- */

/* `emberprof attach ... PID...`; argv[0] is "attach". Returns the exit code. */
int ember__cli_attach(int argc, char **argv);
void ember__cli_attach_usage(FILE *out);

/* ---- version_cmd.c ---- */

/* `emberprof version ...`; argv[0] is "version". Returns the exit code. */
int ember__cli_version(int argc, char **argv);
void ember__cli_version_usage(FILE *out);

/* ---- program.c ---- */

/*
 * Finds `cmd` the way execvp would (a name without '/' is searched in
 * PATH) and checks that it can be profiled: a dynamically linked ELF
 * program of this machine's architecture (it has PT_INTERP) or a "#!"
 * script. On success *out_path is the malloc'd path to execute (the
 * caller frees) and the return is 0. On failure the return is
 * EMBER_EXIT_NOTFOUND or EMBER_EXIT_NOEXEC (the exit code to use), with a
 * message in ember_last_error(), or EMBER_EXIT_INTERNAL on out-of-memory.
 */
int ember__cli_find_program(const char *cmd, char **out_path);

/*
 * Checks that the file at `path` is a program LD_PRELOAD can load into.
 * Returns 0, or EMBER_EXIT_NOEXEC with a message saying why not.
 */
int ember__cli_check_executable(const char *path);

/*
 * Finds the library to preload: $EMBERPROF_LIB if set, else next to this
 * executable, else in its prefix's libdir relative to it (EMBER_REL_LIBDIR,
 * e.g. ../lib/x86_64-linux-gnu), else in ../lib, else in the configured
 * install libdir; the SONAME-versioned file first, then the plain name.
 * alloc_hook: 1 if the program needs emberprof's malloc (allocation
 * profiling with the emberprof backend): libemberprof.so; 0: preferably
 * libemberprof_noalloc.so, which leaves malloc alone, else libemberprof.so
 * found in the same places. On success *out is a malloc'd absolute path
 * (the caller frees). Returns 0, EMBER_EXIT_USAGE if EMBERPROF_LIB names
 * an unusable file, or EMBER_EXIT_INTERNAL if the library cannot be
 * found; message set.
 */
int ember__cli_find_library(int alloc_hook, char **out);

/*
 * Returns a malloc'd new value for LD_PRELOAD with `lib` added first
 * (after any sanitizer runtime already at the front, which must stay
 * first); `old` may be NULL. NULL on out-of-memory.
 */
char *ember__cli_ld_preload_with(const char *old, const char *lib);

/* ---- spawn.c ---- */

/*
 * Runs `path` with argv (argv[0] is what the program sees), in this
 * process's environment, forwarding SIGINT, SIGTERM, SIGHUP and SIGQUIT
 * sent to emberprof itself, and waits for it. On return *status holds the
 * exit code to report: the program's exit status, or 128+N if it was
 * killed by signal N (then *killed_by is N, else 0). Returns 0,
 * EMBER_EXIT_NOEXEC/EMBER_EXIT_NOTFOUND if exec failed (message set;
 * *status is that code), or EMBER_EXIT_INTERNAL if fork or wait failed.
 * The signal dispositions are restored before it returns.
 */
int ember__cli_spawn_wait(const char *path, char *const argv[], int *status, int *killed_by);

/*
 * For a run that watches the program from outside (the tree engine,
 * tools/tree/tree_engine.h): attach() is called with the child's pid after
 * fork and before it execs (the child waits until attach returns; a
 * nonzero return, an exit code with the message set, kills it before it
 * execs and is the spawn's error); step() is called
 * again and again while the program runs (it waits up to ~50 ms itself);
 * finish() once the program has ended, before the summary.
 */
typedef struct ember__cli_watch {
	int (*attach)(void *ud, pid_t pid);
	void (*step)(void *ud);
	void (*finish)(void *ud);
	void *ud;
} ember__cli_watch;

/* ember__cli_spawn_wait with a watcher (NULL: none). */
int ember__cli_spawn_watch(const char *path, char *const argv[], int *status, int *killed_by,
			   const ember__cli_watch *watch);

/* ---- run_tree.c: --engine tree ---- */

typedef struct ember__cli_tree ember__cli_tree;
/*
 * Whether a run without --engine samples the tree from outside: the
 * configuration exported (EMBERPROF_*) needs nothing only the preloaded
 * library does, and perf events count kernel time (kernel samples as
 * root or at perf_event_paranoid <= 1; at 2, user-mode samples weighed by
 * their counts, Linux 6.12+: ember__ptree_probe). Elsewhere the library
 * keeps its ground: where perf events are refused, or would miss the
 * kernel's time that its timers count. 1 for the tree engine; `why` (n
 * bytes) gets the choice and its reason.
 */
int ember__cli_tree_default(char *why, size_t n);

/* The tree engine with the configuration the environment gives (its
 * reporters bound), following children or not. 0 and *out
 * (ember__cli_tree_free), or ember_err. */
int ember__cli_tree_new(ember__cli_tree **out, int verbose, int follow);
/* The watcher that runs it beside the program (ember__cli_spawn_watch). */
void ember__cli_tree_watch(ember__cli_tree *ct, ember__cli_watch *out);
/* Why its attach() failed (the held child was then killed before it
 * exec'd: the program never ran), or NULL if it did not fail or ct is
 * NULL. Owned by ct. */
const char *ember__cli_tree_attach_error(const ember__cli_tree *ct);

/* What the tree engine of this run did, as its log line says it (valid = 0
 * before its end, or with the library): the summary's hint quotes it. */
typedef struct ember__cli_tree_end {
	int valid;
	unsigned long long processes, profiled, profiles, samples, report_failures;
	double sampled_s, unsampled_s; /* CPU in samples; counted, in no sample */
	int user_only;                 /* perf_event_paranoid 2: user-mode samples */
} ember__cli_tree_end;
void ember__cli_tree_last(ember__cli_tree_end *out);
/* Frees it; the reporters' destroy() flushes what they hold. */
void ember__cli_tree_free(ember__cli_tree *ct);
/* Its engine (owned by ct), for `emberprof attach`, which attaches it to
 * running processes itself. */
struct ember__tree *ember__cli_tree_engine(ember__cli_tree *ct);
/* Sampling ends (`attach`): what is left read and every process's last
 * window reported (no background collector), the engine's summary said. */
void ember__cli_tree_stop(ember__cli_tree *ct);

/* What the last ember__cli_spawn_wait() saw of the program as it ended,
 * from /proc/PID/stat before reaping it (known = 0 if it could not). */
typedef struct ember__cli_child_end {
	int known;
	char comm[17];         /* the program it ran last: exec changes it */
	double cpu_s;          /* its own CPU time */
	double children_cpu_s; /* the CPU time of the children it waited for */
} ember__cli_child_end;
void ember__cli_last_child(ember__cli_child_end *out);

/* ---- outdir.c ---- */

/*
 * Creates a new directory "emberprof-<cmdname>-<yyyymmddTHHMMSS>" (local
 * time; "-2", "-3"... appended if taken) in the current directory, mode
 * 0700. *out is its malloc'd absolute path (the caller frees). Returns 0
 * or a negative ember_err with a message.
 */
int ember__cli_make_default_outdir(const char *cmd, char **out);

/*
 * Returns a malloc'd absolute version of `path` (relative paths are
 * resolved against the current directory, without following symlinks).
 * NULL on error (message set).
 */
char *ember__cli_absolute(const char *path);

/* A sorted list of file names, each malloc'd. */
typedef struct ember__cli_names {
	char **v;
	size_t n, cap;
} ember__cli_names;

/*
 * Lists the finished profiles (names ending in .pb.gz, not hidden) in
 * `dir`, sorted by name, into *out (which must be zeroed). A missing
 * directory gives an empty list. Returns 0 or a negative ember_err.
 */
int ember__cli_list_profiles(const char *dir, ember__cli_names *out);
/* The same for any ending, e.g. EMBER_LOCAL_JFR_SUFFIX (JFR recordings). */
int ember__cli_list_files(const char *dir, const char *suffix, ember__cli_names *out);

/* Is `name` in the sorted list? */
int ember__cli_names_has(const ember__cli_names *l, const char *name);

/* Frees the names and zeroes the list. */
void ember__cli_names_free(ember__cli_names *l);

/* ---- run_summary.c: after the program ---- */

/* What the summary is about. */
typedef struct ember__cli_summary {
	const char *dir;   /* the output directory */
	const char *cmd;   /* CMD as given (argv[0] of the program) */
	unsigned long top; /* rows per table (--top) */
	int quiet;         /* no tables (-q) */
	int flame;         /* flame graph pages too (--flame) */
	int tree;          /* the tree engine sampled it (else the library) */
	int follow;        /* the whole tree was profiled (EMBERPROF_FOLLOW_CHILDREN) */
	int killed_by;     /* the signal that killed CMD, or 0 */
} ember__cli_summary;

/*
 * Prints on stderr where the profiles of this run went (the files of dir
 * not in `before`, and JFR recordings not in `jfr_before`: the caller
 * owns both) and their tables, or why none was written, from what the
 * last spawn saw of the program (ember__cli_last_child).
 */
void ember__cli_summarize(const ember__cli_summary *s, const ember__cli_names *before,
			  const ember__cli_names *jfr_before);

#endif
