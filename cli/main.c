/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - the `emberprof` command: the table of its subcommands (from
 * which `emberprof help`, `emberprof help CMD`, `emberprof CMD --help` and
 * the dispatch all come) and the small helpers they share.
 *
 * Conventions: usage asked for (--help) goes to stdout with exit 0; a
 * usage error prints a one-line message and the usage to stderr and exits
 * with 2. Everything emberprof says while running a program goes to
 * stderr, so the program's stdout stays clean.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debuginfo_cmd.h"
#include "emberprof.h"

void ember__cli_error(const char *fmt, ...)
{
	va_list ap;
	fputs("emberprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int ember__cli_is_opt(const char *arg, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(arg, name, n) && (arg[n] == '\0' || (arg[n] == '=' && name[1] == '-'));
}

const char *ember__cli_opt_value(const char *cmd, int argc, char **argv, int *i,
				 const char *name)
{
	const char *arg = argv[*i];
	const char *eq = strchr(arg, '=');
	if (eq && arg[0] == '-' && arg[1] == '-')
		return eq + 1;
	if (*i + 1 >= argc) {
		ember__cli_error("%s: option %s needs a value", cmd, name);
		return NULL;
	}
	return argv[++*i];
}

int ember__cli_parse_count(const char *s, unsigned long min, unsigned long max,
			   unsigned long *out)
{
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* ---- the commands ---- */

static int help(int argc, char **argv);
static void help_usage(FILE *out);

/*
 * Every command, in the order `emberprof help` lists them: its name, the
 * other names it answers to, its arguments and a one-line summary for the
 * overview, the function printing its usage, and its handler (argv[0] is
 * the command's name; returns the exit code). A new command is one row.
 */
typedef struct command {
	const char *name;
	const char *aliases; /* space-separated, or NULL */
	const char *args;
	const char *summary;
	void (*usage)(FILE *out);
	int (*run)(int argc, char **argv);
} command;

static const command commands[] = {
	{"run", NULL, "[options] -- CMD [ARGS...]",
	 "run CMD with the profiler preloaded, write one pprof file per window and print the "
	 "top functions",
	 ember__cli_run_usage, ember__cli_run},
	{"attach", NULL, "[options] PID...",
	 "profile running processes until --duration, Ctrl-C or their exit, and print the top "
	 "functions",
	 ember__cli_attach_usage, ember__cli_attach},
	{"top", NULL, "[--n N] [--sample-index I|NAME] FILE...",
	 "print the top functions of pprof files", ember__cli_top_usage, ember__cli_top},
	{"longpolls", NULL, "[--min MS] FILE...",
	 "list the long polls in pprof or JFR files, with the stacks sampled inside them",
	 ember__cli_longpolls_usage, ember__cli_longpolls},
	{"flame", NULL, "[options] FILE... [-o out.html]",
	 "write a flame graph page of the files", ember__cli_flame_usage, ember__cli_flame},
	{"diff", NULL, "--base FILE... --new FILE... [-o diff.html]",
	 "compare two sets of profiles", ember__cli_diff_usage, ember__cli_diff},
	{"symbolize", NULL, "[--debug-dir DIR]... [--sysroot DIR] [--debuginfod URLS] FILE...",
	 "add function names, lines and inlined frames to pprof files written without them",
	 ember__cli_symbolize_usage, ember__cli_symbolize},
	{"debuginfo", NULL, "upload [options] FILE...",
	 "upload debug files to a Pyroscope server by build ID, skipping those it has",
	 ember__cli_debuginfo_usage, ember__cli_debuginfo},
	{"convert", NULL, "[options] -o OUTPUT FILE...",
	 "convert pprof/JFR files to an OpenTelemetry profiles (OTLP) request, and back",
	 ember__cli_convert_usage, ember__cli_convert},
	{"version", "--version", "[--short]",
	 "print the version, the commit and which optional parts work on this machine",
	 ember__cli_version_usage, ember__cli_version},
	{"help", "--help -h", "[COMMAND]", "print this help, or a command's", help_usage, help},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* The command called `name` (or one of its aliases), or NULL. */
static const command *find_command(const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (!strcmp(commands[i].name, name))
			return &commands[i];
		for (const char *a = commands[i].aliases; a && *a;) {
			size_t len = strcspn(a, " ");
			if (len == n && !strncmp(a, name, n))
				return &commands[i];
			a += len + (a[len] == ' ');
		}
	}
	return NULL;
}

#define SUMMARY_COL 35
#define SUMMARY_WIDTH 80

static void usage(FILE *out)
{
	fprintf(out, "usage: emberprof <command> [arguments]\n\nCommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const command *c = &commands[i];
		int col = fprintf(out, "  %s %s", c->name, c->args);
		if (col > SUMMARY_COL - 2) {
			fprintf(out, "\n%*s", SUMMARY_COL, "");
		} else {
			fprintf(out, "%*s", SUMMARY_COL - col, "");
		}
		col = SUMMARY_COL;
		for (const char *w = c->summary; *w;) {
			size_t n = strcspn(w, " ");
			if (col > SUMMARY_COL && col + 1 + (int)n > SUMMARY_WIDTH) {
				fprintf(out, "\n%*s", SUMMARY_COL, "");
				col = SUMMARY_COL;
			} else if (col > SUMMARY_COL) {
				fputc(' ', out);
				col++;
			}
			col += fprintf(out, "%.*s", (int)n, w);
			w += n;
			while (*w == ' ')
				w++;
		}
		fputc('\n', out);
	}
	fprintf(out, "\n"
		"Run 'emberprof help run' for the options of run; docs/CONFIG.md lists every\n"
		"option and EMBERPROF_* environment variable.\n");
}

static void help_usage(FILE *out)
{
	usage(out);
}

static int help(int argc, char **argv)
{
	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	const command *c = find_command(argv[1]);
	if (c) {
		c->usage(stdout);
		return 0;
	}
	ember__cli_error("no help for unknown command '%s'", argv[1]);
	usage(stderr);
	return EMBER_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	const command *c = find_command(argv[1]);
	if (!c) {
		ember__cli_error("unknown command '%s'", argv[1]);
		usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	/* `emberprof CMD --help` */
	if (c->run != help && argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
		c->usage(stdout);
		return 0;
	}
	return c->run(argc - 1, argv + 1);
}
