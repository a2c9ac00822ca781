/*
 * main.c - the `emberprof` command: dispatches to its subcommands
 * (run, top, version, help) and holds the small helpers they share.
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

static void usage(FILE *out)
{
	fprintf(out,
		"usage: emberprof <command> [arguments]\n"
		"\n"
		"Commands:\n"
		"  run [options] -- CMD [ARGS...]   run CMD with the profiler preloaded, write one\n"
		"                                   pprof file per window and print the top functions\n"
		"  top [--n N] [--sample-index I|NAME] FILE...\n"
		"                                   print the top functions of pprof files\n"
		"  longpolls [--min MS] FILE...     list the long polls in pprof or JFR files, with\n"
		"                                   the stacks sampled inside them\n"
		"  flame [options] FILE... [-o out.html]\n"
		"                                   write a flame graph page of the files\n"
		"  diff --base FILE... --new FILE... [-o diff.html]\n"
		"                                   compare two sets of profiles\n"
		"  convert [options] -o OUT FILE... pprof/JFR to an OTLP profiles request, and back\n"
		"  version [--short]                print the version, the commit and which\n"
		"                                   optional parts work on this machine\n"
		"  help [COMMAND]                   print this help, or a command's\n"
		"\n"
		"Run 'emberprof help run' for the options of run; docs/CONFIG.md lists every\n"
		"option and EMBERPROF_* environment variable.\n");
}

static int help(int argc, char **argv)
{
	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "run")) {
		ember__cli_run_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "top")) {
		ember__cli_top_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "flame")) {
		ember__cli_flame_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "diff")) {
		ember__cli_diff_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "longpolls")) {
		ember__cli_longpolls_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "convert")) {
		ember__cli_convert_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "version")) {
		ember__cli_version_usage(stdout);
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
	const char *cmd = argv[1];
	if (!strcmp(cmd, "run"))
		return ember__cli_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "top"))
		return ember__cli_top(argc - 1, argv + 1);
	if (!strcmp(cmd, "longpolls"))
		return ember__cli_longpolls(argc - 1, argv + 1);
	if (!strcmp(cmd, "flame"))
		return ember__cli_flame(argc - 1, argv + 1);
	if (!strcmp(cmd, "diff"))
		return ember__cli_diff(argc - 1, argv + 1);
	if (!strcmp(cmd, "convert"))
		return ember__cli_convert(argc - 1, argv + 1);
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version"))
		return ember__cli_version(argc - 1, argv + 1);
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
		return help(argc - 1, argv + 1);
	ember__cli_error("unknown command '%s'", cmd);
	usage(stderr);
	return EMBER_EXIT_USAGE;
}
