/* SPDX-License-Identifier: Apache-2.0 */
/*
 * convert.c - reading any profile file into the model and writing OTLP
 * (see convert.h).
 */
#include "convert/convert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/otlp_read.h"
#include "emberprof.h"
#include "encode/otlp.h"
#include "encode/pprof.h"
#include "read/jfr_profile.h"
#include "read/pprof_read.h"
#include "report/otlp.h"
#include "util/error.h"
#include "util/fileio.h"

int ember__convert_format(const char *s)
{
	return !strcmp(s, "pprof") ? EMBER_CONV_PPROF : !strcmp(s, "jfr") ? EMBER_CONV_JFR
	       : !strcmp(s, "otlp") ? EMBER_CONV_OTLP : -1;
}

static uint64_t be(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int ember__convert_spool_body(const uint8_t *data, size_t len, const uint8_t **body,
			      size_t *body_len)
{
	enum { HEADER = 8 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 4 };
	if (len < 8 || memcmp(data, "EMBSPOOL", 8))
		return 0;
	if (len < HEADER || be(data + 8, 4) != 1)
		return ember__error(EMBER_ERR_FORMAT, "a spool file of an unknown version or truncated");
	if (be(data + 12, 4) != EMBER_OTLP_KIND)
		return ember__error(EMBER_ERR_FORMAT, "a spooled window of another reporter (kind "
				    "%08x), not an OTLP request", (unsigned)be(data + 12, 4));
	uint64_t meta = be(data + 36, 4), blen = be(data + 40, 8);
	if (meta > len - HEADER || blen != len - HEADER - meta)
		return ember__error(EMBER_ERR_FORMAT, "a spool file whose sizes do not add up");
	*body = data + HEADER + meta;
	*body_len = (size_t)blen;
	return 1;
}

static int push(ember__profile ***v, size_t *n, ember__profile *p)
{
	ember__profile **nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv) {
		ember__profile_free(p);
		return ember__error_oom("profiles");
	}
	*v = nv;
	nv[(*n)++] = p;
	return 0;
}

static int named(int rc, const char *path)
{
	char why[EMBER_ERROR_MAX];
	snprintf(why, sizeof(why), "%s", ember_last_error());
	return ember__error(rc, "%s: %s", path, why);
}

int ember__convert_read(const char *path, int from, ember__profile ***v, size_t *n, int *format)
{
	uint8_t *data;
	size_t len;
	int rc = ember__read_file(path, EMBER_PPROF_MAX_RAW, &data, &len);
	if (rc)
		return rc;
	const uint8_t *body = data;
	size_t blen = len;
	int sp = ember__convert_spool_body(data, len, &body, &blen);
	if (sp < 0) {
		free(data);
		return named(sp, path);
	}
	if (sp)
		from = EMBER_CONV_OTLP;
	if (from == EMBER_CONV_AUTO && ember__jfr_magic(data, len))
		from = EMBER_CONV_JFR;
	ember__profile *p = NULL;
	if (from == EMBER_CONV_JFR) {
		if ((rc = ember__jfr_to_profile(data, len, &p)) == 0)
			rc = push(v, n, p);
	} else if (from == EMBER_CONV_PPROF || from == EMBER_CONV_AUTO) {
		rc = ember__pprof_read(data, len, &p);
		if (rc == 0) {
			from = EMBER_CONV_PPROF;
			rc = push(v, n, p);
		} else if (from == EMBER_CONV_AUTO) {
			from = EMBER_CONV_OTLP; /* not a pprof: maybe a request body */
		}
	}
	if (from == EMBER_CONV_OTLP) {
		ember__otlp_read_result r;
		rc = ember__otlp_read(body, blen, &r);
		if (rc == 0 && r.notlp_profiles == 0)
			rc = ember__error(EMBER_ERR_FORMAT, "neither a pprof profile nor an OTLP request "
					  "with profiles");
		for (size_t i = 0; rc == 0 && i < r.nprofiles; i++) {
			rc = push(v, n, r.profiles[i]);
			r.profiles[i] = NULL;
		}
		for (size_t i = 0; i < r.nprofiles; i++)
			ember__profile_free(r.profiles[i]);
		r.nprofiles = 0;
		ember__otlp_read_free(&r);
	}
	*format = from;
	free(data);
	return rc ? named(rc, path) : 0;
}

int ember__convert_to_otlp(ember__profile *const *p, size_t n, const char *service, int gzip,
			   uint8_t **out, size_t *out_len)
{
	ember__otlp_attr res[1] = {{"service.name", service, 0}};
	ember__otlp_window w = {.resource = res, .nresource = service ? 1 : 0,
				.scope_name = "emberprof", .scope_version = EMBER_VERSION_STRING,
				.profiles = (const ember__profile *const *)p, .nprofiles = n,
				.profile_ids = 1};
	int rc = ember__otlp_encode(&w, out, out_len);
	if (rc || !gzip)
		return rc;
	uint8_t *gz;
	size_t gzlen;
	rc = ember__gzip(*out, *out_len, &gz, &gzlen);
	free(*out);
	*out = rc ? NULL : gz;
	*out_len = rc ? 0 : gzlen;
	return rc;
}
