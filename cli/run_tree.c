/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_tree.c - `emberprof run --engine tree`: the command's whole process
 * tree sampled from outside (tools/tree/tree_engine.h), with nothing loaded
 * into it. The configuration (EMBERPROF_* as exported by run.c) gives the
 * rate, the window, the depth, the tags and the reporters, which this
 * process calls itself, once per process and window.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cli.h"
#include "emberprof.h"
#include "tree/perf_tree.h"
#include "symbols/debugfile.h"
#include "tree/tree_engine.h"
#include "util/error.h"

struct ember__cli_tree {
	ember_builder *b;
	ember__tree *t;
	int verbose;
	int kernel; /* kernel frames asked for */
	ember__cli_tree_names *names; /* debuginfod during the run, or NULL (run_names.c) */
	/* why the engine could not start on the held child ("" if it did) */
	char attach_error[EMBER_ERROR_MAX];
};

static int tree_attach(void *ud, pid_t pid)
{
	ember__cli_tree *ct = ud;
	int rc = ember__tree_attach(ct->t, pid);
	if (rc < 0) {
		const char *e = ember_last_error();
		snprintf(ct->attach_error, sizeof(ct->attach_error), "%s",
			 e && *e ? e : "perf events could not be opened");
	}
	if (rc == EMBER_ERR_UNSUPPORTED)
		return ember__error(EMBER_EXIT_INTERNAL,
				    "the tree engine needs perf events, which the kernel refused (%s): "
				    "--engine auto profiles with the preloaded library instead",
				    ct->attach_error);
	return rc < 0 ? EMBER_EXIT_INTERNAL : 0;
}

static void tree_step(void *ud)
{
	ember__cli_tree *ct = ud;
	(void)ember__tree_step(ct->t, 50); /* failures are logged and counted */
}

static ember__cli_tree_end last_end;

void ember__cli_tree_last(ember__cli_tree_end *out)
{
	*out = last_end;
}

static double rusage_s(int who)
{
	struct rusage ru;
	if (getrusage(who, &ru) != 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void print_stats(const ember__cli_tree *ct)
{
	ember__tree_stats st;
	ember__tree_get_stats(ct->t, &st);
	last_end = (ember__cli_tree_end){1, st.processes, st.processes_profiled, st.profiles,
					 st.samples, st.report_failures, (double)st.sampled_ns / 1e9,
					 (double)st.unsampled_ns / 1e9, st.user_only};
	if (ct->verbose)
		fprintf(stderr,
			"emberprof: tree engine: the profiles hold %.3f s of CPU (%.3f s in no sample: "
			"%.3f s spread over the stacks of its process, %.3f s as [unsampled]; "
			"%.3f s that no event counted, as [uncounted]; %.3f s of samples' weight "
			"beyond what their process counted, taken off its stacks; %llu processes in "
			"%llu shared profiles); the tree's processes emberprof waited for used %.3f s, "
			"emberprof itself %.3f s\n",
			(double)(st.sampled_ns - st.trimmed_ns + st.unsampled_reported_ns +
				 st.uncounted_ns) / 1e9,
			(double)st.unsampled_reported_ns / 1e9, (double)st.unsampled_spread_ns / 1e9,
			(double)(st.unsampled_reported_ns - st.unsampled_spread_ns) / 1e9,
			(double)st.uncounted_ns / 1e9, (double)st.trimmed_ns / 1e9,
			(unsigned long long)st.processes_shared,
			(unsigned long long)st.shared_profiles, rusage_s(RUSAGE_CHILDREN),
			rusage_s(RUSAGE_SELF));
	if (ct->verbose || st.report_failures || st.lost)
		fprintf(stderr,
			"emberprof: tree engine: %llu processes, %llu profiled, %llu profiles, %llu "
			"samples (%.3f s of CPU, %.3f s more in no sample, %llu walks cut short), "
			"%llu records lost, %llu unwind "
			"tables (%.1f ms; %llu builds held back by the budget), %llu reporter failures\n",
			(unsigned long long)st.processes, (unsigned long long)st.processes_profiled,
			(unsigned long long)st.profiles, (unsigned long long)st.samples,
			(double)st.sampled_ns / 1e9, (double)st.unsampled_ns / 1e9,
			(unsigned long long)st.truncated,
			(unsigned long long)st.lost, (unsigned long long)st.tables,
			(double)st.table_build_ns / 1e6, (unsigned long long)st.tables_deferred,
			(unsigned long long)st.report_failures);
	if (ct->verbose && st.names_held)
		fprintf(stderr, "emberprof: tree engine: %llu profiles held for debug files "
				"fetched during the run, %llu reported at the bound "
				"(EMBERPROF_DEBUGINFOD_WAIT) with fetches still under way\n",
			(unsigned long long)st.names_held, (unsigned long long)st.names_expired);
	if (ct->kernel && st.user_only && (st.samples || st.unsampled_ns))
		fprintf(stderr, "emberprof: note: no kernel frames: perf events sample user mode "
				"only here (perf_event_paranoid >= 2 without CAP_PERFMON)\n");
	else if (ct->kernel && st.kernel_samples && !st.kernel_named)
		fprintf(stderr, "emberprof: note: kernel frames are one [kernel] frame each: %s\n",
			st.kernel_why);
	if (st.user_only && !st.kernel_weighed && st.samples)
		fprintf(stderr, "emberprof: note: perf events sample user mode only here "
				"(perf_event_paranoid >= 2 without CAP_PERFMON) and this kernel "
				"(before 6.12) cannot weigh them by their counts: time in the kernel "
				"is not in the profiles\n");
}

/*
 * Processes of the tree that outlive the command (a daemon it started)
 * are still sampled: a background emberprof, in a session of its own,
 * keeps reading their records and reports each one's last window when it
 * ends, as the preloaded library does inside a daemon. Returns 1 in the
 * command's emberprof once the collector runs (it never returns in the
 * collector), 0 when nothing outlives the command or fork failed.
 */
static int detach_collector(ember__cli_tree *ct, size_t alive)
{
	fflush(NULL);
	/* the child closes its end once it has mapped the rings: until then
	 * ours keep them, and what the processes write to them (the records
	 * of an exec under way, seen lost otherwise) */
	int ready[2];
	if (pipe2(ready, O_CLOEXEC) != 0)
		return 0;
	pid_t c = fork();
	if (c < 0) {
		close(ready[0]);
		close(ready[1]);
		return 0;
	}
	if (c == 0) {
		close(ready[0]);
		int mapped = ember__tree_remap_after_fork(ct->t);
		close(ready[1]);
		setsid();
		/* the parent's fetches (its threads are not here): its hooks go */
		ember__debugfile_set_hooks(NULL);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		/* Reporters of its own: the parent's network reporters keep
		 * their upload threads in the parent, and a fork child's copy
		 * leaves them alone (it would queue windows nobody sends). The
		 * parent's copies here are never freed (their destroy() would
		 * act on the parent's connections). */
		ember_builder *b = NULL;
		int rc = ember_builder_new(&b, "emberprof");
		if (rc == 0)
			rc = ember_builder_apply_env(b);
		if (rc == 0)
			rc = ember__config_bind_reporters(&b->cfg);
		if (rc == 0)
			rc = mapped ? mapped : ember__tree_after_fork(ct->t, &b->cfg);
		if (rc != 0) {
			fprintf(stderr, "emberprof: the background sampler cannot go on, the "
					"processes still running are not profiled: %s\n",
				ember_last_error());
			_exit(1);
		}
		/* Debuginfod for its windows, as in the command's run: a fetcher
		 * of its own (the parent's, and its threads, are not here; what
		 * they fetched is in the cache). Without one (not configured, or
		 * it cannot start: said), the windows go as they are. */
		ember__cli_tree_names *names = NULL;
		(void)ember__cli_tree_names_new(&names, ct->t, ember__config_lines_policy(&b->cfg),
						 0);
		while (ember__tree_alive(ct->t) > 0)
			(void)ember__tree_step(ct->t, 100);
		(void)ember__tree_finish(ct->t);
		ember__cli_tree_names_end(names, ct->t);
		ember__tree_free(ct->t);
		ember_builder_free(b); /* flushes its reporters */
		_exit(0);
	}
	close(ready[1]);
	struct pollfd pfd = {.fd = ready[0], .events = POLLIN};
	(void)poll(&pfd, 1, 10000); /* POLLHUP; bounded: a child that hangs is not waited for */
	close(ready[0]);
	fprintf(stderr, "emberprof: %zu process%s of the tree still run%s (a daemon?): sampled "
			"until %s, by emberprof %ld in the background\n",
		alive, alive == 1 ? "" : "es", alive == 1 ? "s" : "",
		alive == 1 ? "it ends; its profiles are written then" : "they end; their profiles are written then",
		(long)c);
	return 1;
}

/* Debuginfod during the run: over (what failed said). */
static void end_names(ember__cli_tree *ct)
{
	ember__cli_tree_names_end(ct->names, ct->t);
	ct->names = NULL;
}

static void tree_finish(void *ud)
{
	ember__cli_tree *ct = ud;
	/* what the command's processes left, and their last windows */
	(void)ember__tree_settle(ct->t);
	size_t alive = ember__tree_alive(ct->t);
	if (alive && detach_collector(ct, alive)) {
		end_names(ct);
		print_stats(ct);
		return;
	}
	/* the tree is over and reaped: what it used by rusage */
	ember__tree_set_waited(ct->t, (uint64_t)(rusage_s(RUSAGE_CHILDREN) * 1e9));
	(void)ember__tree_finish(ct->t);
	end_names(ct);
	print_stats(ct);
}

/* What the tree engine does not make (yet), or NULL: asked for, it is an
 * error naming the option, not a run that silently lacks it. */
static const char *unsupported(const ember__config *cfg)
{
	if (cfg->backend == EMBER_BACKEND_ASYNC_PROFILER)
		return "--backend asprof (async-profiler runs inside the program)";
	if (cfg->wall_ms)
		return "--wall (EMBERPROF_WALL): wall-clock profiles";
	if (cfg->alloc_mean)
		return "--alloc (EMBERPROF_ALLOC): allocation profiles";
	for (size_t i = 0; i < cfg->nreporters; i++)
		if (cfg->reporters[i].formats & EMBER_FORMAT_JFR)
			return "--format jfr or both (EMBERPROF_OUTPUT_FORMAT): JFR recordings";
	return NULL;
}

static int check_supported(const ember__config *cfg)
{
	const char *what = unsupported(cfg);
	if (!what)
		return 0;
	return ember__error(EMBER_ERR_INVALID,
			    "--engine tree makes CPU profiles in pprof only, not %s: run without "
			    "--engine tree for those",
			    what);
}

/* A setting only the preloaded library acts on, or NULL. */
static const char *library_setting(const ember__config *cfg)
{
	const char *what = unsupported(cfg);
	if (what)
		return what;
	if (cfg->thread_labels)
		return "--thread-labels (EMBERPROF_THREAD_LABELS)";
	if (cfg->signo != SIGPROF)
		return "--signal (EMBERPROF_SIGNAL): the library's sampling signal";
	if (cfg->unwind != EMBER_UNWIND_AUTO)
		return "--unwind (EMBERPROF_UNWIND)";
	if (cfg->perf_refuse)
		return "EMBERPROF_ENGINE_PERF_DISABLE";
	if (getenv("EMBERPROF_LIB"))
		return "EMBERPROF_LIB (a library to preload)";
	return NULL;
}

int ember__cli_tree_default(char *why, size_t n)
{
	ember_builder *b = NULL;
	int rc = ember_builder_new(&b, "emberprof");
	if (rc == 0)
		rc = ember_builder_apply_env(b);
	if (rc != 0) {
		/* the library's validation has named the problem already */
		snprintf(why, n, "the preloaded library: %s", ember_last_error());
		ember_builder_free(b);
		return 0;
	}
	const char *lib = library_setting(&b->cfg);
	int tree = 0;
	if (lib) {
		snprintf(why, n, "the preloaded library, for %s", lib);
	} else {
		int probe = ember__ptree_probe();
		tree = probe > 0;
		snprintf(why, n, "%s",
			 probe == 2   ? "the tree engine: perf events are permitted, with kernel time"
			 : probe == 1 ? "the tree engine: perf events sample user mode only here "
					"(perf_event_paranoid 2 without CAP_PERFMON), each sample weighed "
					"by its count, kernel time included"
				      : "the preloaded library: the kernel refuses perf events here, or "
					"would sample user mode only without counts (before Linux 6.12)");
	}
	ember_builder_free(b);
	return tree;
}

int ember__cli_tree_new(ember__cli_tree **out, int verbose, int follow)
{
	*out = NULL;
	ember__cli_tree *ct = calloc(1, sizeof(*ct));
	if (!ct)
		return ember__error_oom("tree engine");
	ct->verbose = verbose;
	int rc = ember_builder_new(&ct->b, "emberprof");
	if (rc == 0)
		rc = ember_builder_apply_env(ct->b);
	if (rc == 0)
		rc = check_supported(&ct->b->cfg);
	if (rc == 0)
		rc = ember__config_bind_reporters(&ct->b->cfg);
	if (rc == 0)
		rc = ember__tree_new(&ct->t, &ct->b->cfg);
	if (rc) {
		ember__cli_tree_free(ct);
		return rc;
	}
	ember__tree_set_follow(ct->t, follow);
	/* EMBERPROF_KERNEL (--no-kernel: 0): the kernel's frames, where the
	 * kernel lets perf events sample it (default 1) */
	const char *k = getenv("EMBERPROF_KERNEL");
	if (k && *k && strcmp(k, "0") && strcmp(k, "1")) {
		ember__cli_tree_free(ct);
		return ember__error(EMBER_ERR_INVALID, "EMBERPROF_KERNEL is '%s': expected 0 or 1", k);
	}
	ct->kernel = !(k && !strcmp(k, "0"));
	ember__tree_set_kernel(ct->t, ct->kernel);
	/* the windows' missing names from debuginfod, during the run */
	rc = ember__cli_tree_names_new(&ct->names, ct->t, ember__config_lines_policy(&ct->b->cfg),
				       verbose);
	if (rc) {
		ember__cli_tree_free(ct);
		return rc;
	}
	*out = ct;
	return 0;
}

void ember__cli_tree_watch(ember__cli_tree *ct, ember__cli_watch *out)
{
	*out = (ember__cli_watch){tree_attach, tree_step, tree_finish, ct};
}

const char *ember__cli_tree_attach_error(const ember__cli_tree *ct)
{
	return ct && ct->attach_error[0] ? ct->attach_error : NULL;
}

ember__tree *ember__cli_tree_engine(ember__cli_tree *ct)
{
	return ct->t;
}

void ember__cli_tree_stop(ember__cli_tree *ct)
{
	(void)ember__tree_finish(ct->t);
	end_names(ct);
	print_stats(ct);
}

void ember__cli_tree_free(ember__cli_tree *ct)
{
	if (!ct)
		return;
	end_names(ct);
	ember__tree_free(ct->t);
	ember_builder_free(ct->b); /* the reporters' destroy: flushes */
	free(ct);
}
