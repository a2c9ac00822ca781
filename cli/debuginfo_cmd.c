/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfo_cmd.c - `emberprof debuginfo upload [options] FILE...`: sends
 * each FILE (an executable, a library or a separate debug file) to a
 * Grafana Pyroscope server's debug-info service under its GNU build ID,
 * unless the server has that build ID already (tools/debuginfo/).
 *
 * The server options are `run --server`'s (--server, --auth-token,
 * --basic-auth, --tenant, --header) and, where an option is not given, the
 * same EMBERPROF_SERVER_* variables (and Pyroscope's PYROSCOPE_* names),
 * so a CI job that profiles with `run --server` uploads with the same
 * environment. An option wins over its variable. Results go to stdout,
 * one line per file; errors to stderr, naming the file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/options.h"
#include "cli.h"
#include "debuginfo/debuginfo_file.h"
#include "debuginfo/debuginfo_upload.h"
#include "debuginfo_cmd.h"
#include "emberprof.h"
#include "report/pyroscope.h"
#include "upload/http.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/redact.h"

#define MAX_HEADERS 64

void ember__cli_debuginfo_usage(FILE *out)
{
	fprintf(out,
		"usage: emberprof debuginfo upload [options] FILE...\n"
		"\n"
		"Uploads each FILE (an executable, a shared library or a separate debug file,\n"
		"ELF with a GNU build ID) to a Grafana Pyroscope server's debug-info service,\n"
		"which then names the frames of profiles with that build ID. A build ID the\n"
		"server has already is not sent again. Exit status: 0 when every file is on\n"
		"the server, 1 when one is not, 2 for a usage error.\n"
		"\n"
		"  --server URL            the Pyroscope server, e.g. http://localhost:4040\n"
		"                          [EMBERPROF_SERVER_URL, PYROSCOPE_SERVER_ADDRESS]\n"
		"  --auth-token TOKEN      bearer token [EMBERPROF_SERVER_AUTH_TOKEN]\n"
		"  --basic-auth USER:PASSWORD  HTTP basic auth [EMBERPROF_SERVER_BASIC_AUTH_USER,\n"
		"                          EMBERPROF_SERVER_BASIC_AUTH_PASSWORD]\n"
		"  --tenant ID             tenant, sent as X-Scope-OrgID [EMBERPROF_SERVER_TENANT_ID]\n"
		"  --header 'NAME: VALUE'  an extra HTTP header; repeatable [EMBERPROF_SERVER_HEADERS]\n"
		"  --ca-file FILE          CA bundle for https [EMBERPROF_SERVER_CA_FILE]\n"
		"  --insecure              do not verify the server's certificate\n"
		"                          [EMBERPROF_SERVER_INSECURE]\n"
		"  --connect-timeout DURATION  per connection (5s) [EMBERPROF_SERVER_CONNECT_TIMEOUT]\n"
		"  --timeout DURATION      per call of the service (30s) [EMBERPROF_SERVER_TIMEOUT]\n"
		"  --upload-timeout DURATION  per file's bytes (10m)\n"
		"\n"
		"The PYROSCOPE_* names of Pyroscope's agents stand in for unset EMBERPROF_SERVER_*\n"
		"ones. A stripped executable gives the server only its exported symbols: upload\n"
		"the unstripped build, or its debug file (the distribution's debug package, or\n"
		"what objcopy's only-keep-debug mode makes) instead.\n");
}

typedef struct dbg_opts {
	const char *url, *token, *basic, *tenant, *ca_file;
	const char *headers[MAX_HEADERS];
	size_t nheaders;
	int insecure;
	unsigned connect_ms, timeout_ms, upload_ms;
	int have_connect, have_timeout, have_insecure;
} dbg_opts;

/* The option at argv[*i] takes a value: "--name=V" or "--name V". NULL if not this option. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, int *missing)
{
	const char *a = argv[*i] + 2;
	size_t n = strlen(name);
	if (strncmp(a, name, n))
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n])
		return NULL;
	if (*i + 1 >= argc) {
		*missing = 1;
		return NULL;
	}
	return argv[++*i];
}

static int parse_duration(const char *what, const char *v, unsigned max_ms, unsigned *out)
{
	if (ember__parse_duration_ms(v, out) < 0 || *out == 0 || *out > max_ms) {
		ember__cli_error("debuginfo upload: --%s \"%s\" is invalid: expected a duration "
				 "such as 30s (at most %u min)", what, v, max_ms / 60000);
		return -1;
	}
	return 0;
}

/* Parses the options; *first is the index of the first FILE. 0, 1 (help shown) or -1. */
static int parse_args(int argc, char **argv, dbg_opts *o, int *first)
{
	int i = 2;
	for (; i < argc; i++) {
		const char *a = argv[i], *v;
		int missing = 0;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			ember__cli_debuginfo_usage(stdout);
			return 1;
		}
		if (!strcmp(a, "--insecure")) {
			o->insecure = o->have_insecure = 1;
			continue;
		}
		if (a[1] != '-')
			goto unknown;
		if ((v = opt_value(argc, argv, &i, "server", &missing))) {
			o->url = v;
		} else if (!missing && (v = opt_value(argc, argv, &i, "auth-token", &missing))) {
			o->token = v;
		} else if (!missing && (v = opt_value(argc, argv, &i, "basic-auth", &missing))) {
			const char *colon = strchr(v, ':');
			if (!colon || colon == v || !colon[1]) {
				ember__cli_error("debuginfo upload: --basic-auth is invalid: expected "
						 "USER:PASSWORD");
				return -1;
			}
			o->basic = v;
		} else if (!missing && (v = opt_value(argc, argv, &i, "tenant", &missing))) {
			o->tenant = v;
		} else if (!missing && (v = opt_value(argc, argv, &i, "header", &missing))) {
			if (o->nheaders == MAX_HEADERS) {
				ember__cli_error("debuginfo upload: more than %d --header options",
						 MAX_HEADERS);
				return -1;
			}
			o->headers[o->nheaders++] = v;
		} else if (!missing && (v = opt_value(argc, argv, &i, "ca-file", &missing))) {
			o->ca_file = v;
		} else if (!missing && (v = opt_value(argc, argv, &i, "connect-timeout", &missing))) {
			if (parse_duration("connect-timeout", v, 600000, &o->connect_ms))
				return -1;
			o->have_connect = 1;
		} else if (!missing && (v = opt_value(argc, argv, &i, "upload-timeout", &missing))) {
			if (parse_duration("upload-timeout", v, 3600000, &o->upload_ms))
				return -1;
		} else if (!missing && (v = opt_value(argc, argv, &i, "timeout", &missing))) {
			if (parse_duration("timeout", v, 3600000, &o->timeout_ms))
				return -1;
			o->have_timeout = 1;
		} else if (missing) {
			ember__cli_error("debuginfo upload: option %s needs a value", a);
			return -1;
		} else {
			goto unknown;
		}
	}
	*first = i;
	return 0;
unknown:
	ember__cli_error("debuginfo upload: unknown option '%s'", argv[i]);
	ember__cli_debuginfo_usage(stderr);
	return -1;
}

/* ---- the environment, where an option is not given ---- */

/* Our variable, else Pyroscope's (theirs may be NULL). 0 unset, 1 set, <0 invalid. */
static int env2(const char *ours, const char *theirs, const char **value, ember__opt_value *x)
{
	const ember__option *which;
	int rc = ember__opt_read2(ember__opt_find(ours), theirs ? ember__opt_find(theirs) : NULL,
				  &which, value, x);
	if (rc < 0)
		ember__cli_error("debuginfo upload: %s", ember_last_error());
	return rc;
}

/* Fills what the options left unset from EMBERPROF_SERVER_* / PYROSCOPE_*. 0 or -1. */
static int read_env(dbg_opts *o, char **env_headers)
{
	ember__opt_value x;
	const char *v;
	int rc;
	if (!o->url) {
		if ((rc = env2("EMBERPROF_SERVER_URL", "PYROSCOPE_SERVER_ADDRESS", &v, &x)) < 0)
			return -1;
		o->url = rc ? v : NULL;
	}
	if (!o->token && !o->basic) { /* auth: the options, or else the variables */
		const char *tok = NULL, *user = NULL, *pass = NULL;
		if (env2("EMBERPROF_SERVER_AUTH_TOKEN", "PYROSCOPE_AUTH_TOKEN", &tok, &x) < 0 ||
		    env2("EMBERPROF_SERVER_BASIC_AUTH_USER", "PYROSCOPE_BASIC_AUTH_USER", &user,
			 &x) < 0 ||
		    env2("EMBERPROF_SERVER_BASIC_AUTH_PASSWORD", "PYROSCOPE_BASIC_AUTH_PASSWORD",
			 &pass, &x) < 0)
			return -1;
		if (!!user != !!pass) {
			ember__cli_error("debuginfo upload: the basic auth %s is set in the "
					 "environment but the %s is not", user ? "user" : "password",
					 user ? "password" : "user");
			return -1;
		}
		o->token = tok;
		if (user) {
			static char *joined; /* lives as long as the command */
			free(joined);
			if (asprintf(&joined, "%s:%s", user, pass) < 0) {
				ember__cli_error("out of memory");
				return -1;
			}
			o->basic = joined;
		}
	}
	if (!o->tenant) {
		if ((rc = env2("EMBERPROF_SERVER_TENANT_ID", "PYROSCOPE_TENANT_ID", &v, &x)) < 0)
			return -1;
		o->tenant = rc ? v : NULL;
	}
	if (!o->nheaders) {
		if ((rc = env2("EMBERPROF_SERVER_HEADERS", NULL, &v, &x)) < 0)
			return -1;
		if (rc && *v == '{') {
			ember__cli_error("debuginfo upload: EMBERPROF_SERVER_HEADERS in JSON is not "
					 "read here: give --header 'NAME: VALUE' options, or one "
					 "line per header");
			return -1;
		}
		if (rc && !(*env_headers = strdup(v))) {
			ember__cli_error("out of memory");
			return -1;
		}
		for (char *s = *env_headers, *save = NULL, *line;
		     s && (line = strtok_r(s, "\n", &save)); s = NULL)
			if (o->nheaders < MAX_HEADERS)
				o->headers[o->nheaders++] = line;
	}
	if (!o->ca_file) {
		if ((rc = env2("EMBERPROF_SERVER_CA_FILE", NULL, &v, &x)) < 0)
			return -1;
		o->ca_file = rc ? v : NULL;
	}
	if (!o->have_insecure && (rc = env2("EMBERPROF_SERVER_INSECURE", NULL, &v, &x)) != 0) {
		if (rc < 0)
			return -1;
		o->insecure = x.i != 0;
	}
	if (!o->have_connect && (rc = env2("EMBERPROF_SERVER_CONNECT_TIMEOUT", NULL, &v, &x))) {
		if (rc < 0)
			return -1;
		o->connect_ms = (unsigned)x.u;
	}
	if (!o->have_timeout && (rc = env2("EMBERPROF_SERVER_TIMEOUT",
					    "PYROSCOPE_PROFILE_EXPORT_TIMEOUT", &v, &x))) {
		if (rc < 0)
			return -1;
		o->timeout_ms = (unsigned)x.u;
	}
	return 0;
}

/* ---- checks and headers ---- */

static int printable(const char *what, const char *s, int allow_space)
{
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f || (!allow_space && *c == ' ')) {
			ember__cli_error("debuginfo upload: %s contains %s", what,
					 allow_space ? "a control character"
						     : "a space or a control character");
			return -1;
		}
	return 0;
}

/* Appends a formatted line to lines[*n]. 0 or -1 (out of memory, said). */
static int add_line(char **lines, size_t *n, const char *fmt, const char *a, const char *b)
{
	char *s = NULL;
	if (asprintf(&s, fmt, a, b) < 0) {
		ember__cli_error("out of memory");
		return -1;
	}
	lines[(*n)++] = s;
	return 0;
}

/* Checks the options and builds the header lines (into lines[], malloc'd). 0 or -1. */
static int build_headers(const dbg_opts *o, char **lines, size_t *n)
{
	static const char *const ours[] = {"Content-Type", "Content-Length", "Host",
					   "Transfer-Encoding", "Expect", "Connect-Protocol-Version",
					   "Connect-Timeout-Ms", "User-Agent"};
	*n = 0;
	if (o->token && o->basic) {
		ember__cli_error("debuginfo upload: give either basic auth or a bearer token, not "
				 "both");
		return -1;
	}
	if (o->token) {
		if (printable("the bearer token", o->token, 0) ||
		    add_line(lines, n, "Authorization: %s %s", "Bearer", o->token))
			return -1;
	} else if (o->basic) {
		if (printable("the basic auth user or password", o->basic, 1))
			return -1;
		char *b64 = ember__base64(o->basic, strlen(o->basic));
		int bad = !b64 || add_line(lines, n, "Authorization: %s %s", "Basic", b64);
		free(b64);
		if (bad)
			return -1;
	}
	if (o->tenant) {
		if (ember__pyroscope_check_tenant(o->tenant)) {
			ember__cli_error("debuginfo upload: invalid --tenant: %s", ember_last_error());
			return -1;
		}
		if (add_line(lines, n, "%s%s", "X-Scope-OrgID: ", o->tenant))
			return -1;
	}
	for (size_t i = 0; i < o->nheaders; i++) {
		size_t nl;
		char shown[160];
		if (ember__http_check_header(o->headers[i], &nl)) {
			ember__cli_error("debuginfo upload: --header \"%s\" is invalid: %s",
					 ember__redact_header(o->headers[i], shown, sizeof(shown)),
					 ember_last_error());
			return -1;
		}
		for (size_t k = 0; k < sizeof(ours) / sizeof(ours[0]); k++)
			if (strlen(ours[k]) == nl && !strncasecmp(o->headers[i], ours[k], nl)) {
				ember__cli_error("debuginfo upload: header %s is set by emberprof and "
						 "cannot be given", ours[k]);
				return -1;
			}
		if ((nl == 13 && !strncasecmp(o->headers[i], "Authorization", nl) &&
		     (o->token || o->basic)) ||
		    (nl == 13 && !strncasecmp(o->headers[i], "X-Scope-OrgID", nl) && o->tenant)) {
			ember__cli_error("debuginfo upload: a %.*s header is given twice (by --header "
					 "and by the auth or tenant settings)", (int)nl, o->headers[i]);
			return -1;
		}
		if (add_line(lines, n, "%s%s", o->headers[i], ""))
			return -1;
	}
	return 0;
}

/* ---- the command ---- */

typedef struct done_id {
	char build_id[2 * EMBER__DBG_BUILD_ID_MAX + 1];
	const char *path;
	int ok;
} done_id;

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

/* One file. Returns 1 when it is on the server, 0 when not. */
static int upload_one(ember__dbgup *u, const char *path, done_id *done, size_t *ndone,
		      size_t *nuploaded, size_t *npresent)
{
	ember__dbgfile f;
	if (ember__dbgfile_open(path, &f)) {
		ember__cli_error("debuginfo upload: %s", ember_last_error());
		return 0;
	}
	for (size_t k = 0; k < *ndone; k++)
		if (!strcmp(done[k].build_id, f.build_id)) {
			if (done[k].ok)
				printf("skipped   %s: build ID %s is that of %s, just sent (the server "
				       "keeps one file per build ID)\n", path, f.build_id,
				       done[k].path);
			else
				ember__cli_error("debuginfo upload: %s: not sent: build ID %s is that "
						 "of %s, which failed", path, f.build_id, done[k].path);
			ember__dbgfile_close(&f);
			return done[k].ok;
		}
	if (!f.has_debug_info && !f.has_symtab)
		fprintf(stderr, "emberprof: debuginfo upload: note: %s has neither DWARF nor a "
			"symbol table: the server can name only its exported functions; upload its "
			"debug file instead where there is one\n", path);
	ember__dbgup_outcome outcome;
	char reason[512];
	int ok = ember__dbgup_file(u, base_name(path), &f, &outcome, reason, sizeof(reason)) == 0;
	if (!ok) {
		ember__cli_error("debuginfo upload: %s (build ID %s): %s", path, f.build_id,
				 ember_last_error());
	} else if (outcome == EMBER__DBGUP_UPLOADED) {
		printf("uploaded  %s: build ID %s, %s, %zu bytes\n", path, f.build_id,
		       ember__dbg_type_name(f.type), f.size);
		(*nuploaded)++;
	} else {
		printf("present   %s: build ID %s is on the server already (\"%s\")\n", path,
		       f.build_id, reason);
		(*npresent)++;
	}
	done[*ndone].ok = ok;
	done[*ndone].path = path;
	memcpy(done[*ndone].build_id, f.build_id, sizeof(f.build_id));
	(*ndone)++;
	ember__dbgfile_close(&f);
	return ok;
}

int ember__cli_debuginfo(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "upload")) {
		if (argc < 2)
			ember__cli_error("debuginfo: no subcommand given (expected 'upload')");
		else
			ember__cli_error("debuginfo: unknown subcommand '%s' (expected 'upload')",
					 argv[1]);
		ember__cli_debuginfo_usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	dbg_opts o = {0};
	char *env_headers = NULL;
	char *lines[MAX_HEADERS + 2] = {0};
	size_t nlines = 0;
	int first, exit_code = EMBER_EXIT_USAGE;
	ember__dbgup *u = NULL;
	done_id *done = NULL;
	int rc = parse_args(argc, argv, &o, &first);
	if (rc)
		return rc > 0 ? 0 : EMBER_EXIT_USAGE;
	if (read_env(&o, &env_headers))
		goto out;
	if (!o.url) {
		ember__cli_error("debuginfo upload: no server: give --server URL (or set "
				 "EMBERPROF_SERVER_URL)");
		goto out;
	}
	if (first >= argc) {
		ember__cli_error("debuginfo upload: no FILE given");
		ember__cli_debuginfo_usage(stderr);
		goto out;
	}
	if (build_headers(&o, lines, &nlines))
		goto out;
	ember__dbgup_opts uo = {
		.url = o.url,
		.headers = (const char *const *)lines,
		.nheaders = nlines,
		.ca_file = o.ca_file,
		.insecure = o.insecure,
		.connect_timeout_ms = o.connect_ms,
		.timeout_ms = o.timeout_ms,
		.upload_timeout_ms = o.upload_ms,
	};
	if (o.connect_ms && o.timeout_ms && o.connect_ms > o.timeout_ms) {
		ember__cli_error("debuginfo upload: the connect timeout is longer than the "
				 "timeout of a call");
		goto out;
	}
	if (ember__dbgup_new(&u, &uo)) {
		char shown[256];
		ember__cli_error("debuginfo upload: --server \"%s\": %s",
				 ember__redact_url(o.url, shown, sizeof(shown)), ember_last_error());
		goto out;
	}
	if (!(done = calloc((size_t)(argc - first), sizeof(*done)))) {
		ember__cli_error("out of memory");
		exit_code = EMBER_EXIT_INTERNAL;
		goto out;
	}
	size_t ndone = 0, nup = 0, npresent = 0, nfailed = 0;
	for (int i = first; i < argc; i++) {
		nfailed += !upload_one(u, argv[i], done, &ndone, &nup, &npresent);
		fflush(stdout);
		if (ember__dbgup_unreachable(u) && i + 1 < argc) {
			ember__cli_error("debuginfo upload: the server did not answer: %d file%s "
					 "not tried", argc - i - 1, argc - i - 1 == 1 ? "" : "s");
			nfailed += (size_t)(argc - i - 1);
			break;
		}
	}
	fprintf(stderr, "emberprof: debuginfo upload: %zu uploaded, %zu already on the server, "
		"%zu failed\n", nup, npresent, nfailed);
	exit_code = nfailed ? 1 : 0;
out:
	ember__dbgup_free(u);
	free(done);
	for (size_t i = 0; i < nlines; i++)
		free(lines[i]);
	free(env_headers);
	return exit_code;
}
