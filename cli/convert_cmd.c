/* SPDX-License-Identifier: Apache-2.0 */
/*
 * convert_cmd.c - `emberprof convert [--from F] [--to F] [--service NAME]
 * [--gzip] -o OUTPUT INPUT...`: pprof and JFR files to one OTLP profiles
 * request body (ExportProfilesServiceRequest, the pinned version: see
 * docs/design/otlp.md), and OTLP request bodies (such as the OTLP
 * reporter's spooled windows) back to pprof. The work is tools/convert/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convert/convert.h"
#include "emberprof.h"
#include "encode/otlp.h"
#include "encode/pprof.h"
#include "util/fileio.h"

void ember__cli_convert_usage(FILE *out)
{
	fprintf(out,
		"usage: emberprof convert [--from pprof|jfr|otlp] [--to otlp|pprof]\n"
		"                         [--service NAME] [--gzip] -o OUTPUT INPUT...\n"
		"\n"
		"Converts profiles between pprof, JFR and OpenTelemetry profiles (an OTLP\n"
		"ExportProfilesServiceRequest body, opentelemetry-proto %s, profiles %s).\n"
		"pprof and JFR INPUTs (the profiles of one window: CPU, wall, memory) become\n"
		"one request in OUTPUT, which a collector takes as the body of a POST to\n"
		"http://collector:4318%s (Content-Type: application/x-protobuf).\n"
		"An OTLP INPUT (raw or gzip'd, e.g. a window the OTLP reporter spooled) becomes\n"
		"pprof: OUTPUT, or OUTPUT.1, OUTPUT.2... when it holds several profiles.\n"
		"A window the OTLP reporter spooled (EMBERPROF_OTLP_SPOOL_DIR, *.ems) is read\n"
		"as its request; with --to otlp, OUTPUT gets its body as queued (gzip'd when\n"
		"compression was on: send it with Content-Encoding: gzip).\n"
		"  --from F     the INPUTs' format (default: by content)\n"
		"  --to F       the output format (default: otlp for pprof/JFR input, else pprof)\n"
		"  --service N  the request's service.name\n"
		"  --gzip       gzip the OTLP output (send it with Content-Encoding: gzip)\n"
		"  -o OUTPUT    the output file\n",
		EMBER_OTLP_PROTO_TAG, EMBER_OTLP_PROFILES_VERSION, EMBER_OTLP_HTTP_PATH);
}

static int write_out(const char *path, const uint8_t *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len) {
		if (f)
			fclose(f);
		ember__cli_error("convert: cannot write %s", path);
		return 1;
	}
	if (fclose(f)) {
		ember__cli_error("convert: cannot write %s", path);
		return 1;
	}
	return 0;
}

int ember__cli_convert(int argc, char **argv)
{
	int from = EMBER_CONV_AUTO, to = EMBER_CONV_AUTO, gzip = 0, code = EMBER_EXIT_USAGE;
	const char *service = NULL, *output = NULL;
	int i;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			ember__cli_convert_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--gzip")) {
			gzip = 1;
			continue;
		} else if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!v) {
			ember__cli_error("convert: %s needs a value", a);
			return EMBER_EXIT_USAGE;
		}
		if (!strcmp(a, "--from") || !strcmp(a, "--to")) {
			int f = ember__convert_format(v);
			if (f < 0 || (!strcmp(a, "--to") && f == EMBER_CONV_JFR)) {
				ember__cli_error("convert: %s %s: expected %s", a, v,
						 a[2] == 'f' ? "pprof, jfr or otlp" : "otlp or pprof");
				return EMBER_EXIT_USAGE;
			}
			*(a[2] == 'f' ? &from : &to) = f;
		} else if (!strcmp(a, "--service")) {
			service = v;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			output = v;
		} else {
			ember__cli_error("convert: unknown option %s", a);
			ember__cli_convert_usage(stderr);
			return EMBER_EXIT_USAGE;
		}
		i++;
	}
	if (i >= argc || !output) {
		ember__cli_error("convert: %s", !output ? "no output (-o OUTPUT)" : "no input file");
		ember__cli_convert_usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	/* a spooled window, --to otlp: its request body as it was queued */
	if (argc - i == 1 && to == EMBER_CONV_OTLP) {
		uint8_t *data;
		size_t len;
		const uint8_t *body;
		size_t blen;
		if (ember__read_file(argv[i], EMBER_PPROF_MAX_RAW, &data, &len) == 0) {
			int sp = ember__convert_spool_body(data, len, &body, &blen);
			int w = sp > 0 ? write_out(output, body, blen) : 0;
			free(data);
			if (sp < 0)
				ember__cli_error("convert: %s: %s", argv[i], ember_last_error());
			if (sp)
				return sp < 0 || w ? 1 : 0;
		}
	}
	ember__profile **v = NULL;
	size_t n = 0;
	int any_otlp = 0, fmt = 0;
	for (; i < argc; i++) {
		if (ember__convert_read(argv[i], from, &v, &n, &fmt)) {
			ember__cli_error("convert: %s", ember_last_error());
			code = 1;
			goto out;
		}
		any_otlp |= fmt == EMBER_CONV_OTLP;
	}
	if (to == EMBER_CONV_AUTO)
		to = any_otlp ? EMBER_CONV_PPROF : EMBER_CONV_OTLP;
	code = 1;
	if (to == EMBER_CONV_OTLP) {
		uint8_t *body;
		size_t len;
		if (ember__convert_to_otlp(v, n, service, gzip, &body, &len)) {
			ember__cli_error("convert: %s", ember_last_error());
			goto out;
		}
		code = write_out(output, body, len);
		free(body);
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		uint8_t *pb;
		size_t len;
		char name[4096];
		if (k == 0)
			snprintf(name, sizeof(name), "%s", output);
		else
			snprintf(name, sizeof(name), "%s.%zu", output, k);
		if (ember__pprof_encode(v[k], &pb, &len)) {
			ember__cli_error("convert: %s", ember_last_error());
			goto out;
		}
		int w = write_out(name, pb, len);
		free(pb);
		if (w)
			goto out;
		if (n > 1)
			printf("%s\n", name);
	}
	code = 0;
out:
	for (size_t k = 0; k < n; k++)
		ember__profile_free(v[k]);
	free(v);
	return code;
}
