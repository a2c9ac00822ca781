/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pyroscope.h - internals of the Grafana Pyroscope reporter behind
 * ember_reporter_pyroscope() (declared in include/emberprof.h), exposed
 * for the unit tests and for the environment variables (src/agent/env_pyroscope.c).
 *
 * Labels. A window's series labels are emberprof's own: __name__ (from
 * the profile type: cpu -> process_cpu, wall -> wall, memory -> memory),
 * service_name (the application name) and the spy labels
 * (pyroscope_spy, otel.scope.name, otel.scope.version, naming emberprof).
 * Static tags are NOT repeated as series labels: they already are labels
 * of every sample, which the server promotes to series labels, and a
 * dynamic label (ember_labels_push) with the same key overrides a tag on
 * its samples - a series label would defeat that, because the server
 * lets series labels win. A tag may however take the place of one of our
 * own labels: a tag named service_name replaces the application name in
 * service_name, and a tag named like a spy label replaces it (as
 * pyroscope-rs does). Names starting with "__" are reserved by the server
 * and refused.
 *
 * Nothing here is async-signal-safe.
 */
#ifndef EMBER_REPORT_PYROSCOPE_H
#define EMBER_REPORT_PYROSCOPE_H

#include <stddef.h>
#include <stdint.h>

#include "emberprof.h"

/* The server's limits (Grafana Pyroscope defaults). */
#define EMBER_PYRO_MAX_LABELS 30        /* label names per series */
#define EMBER_PYRO_MAX_NAME_LEN 1024
#define EMBER_PYRO_MAX_VALUE_LEN 2048
#define EMBER_PYRO_MAX_TENANT_LEN 150

#define EMBER_PYRO_MAX_DEPTH 1000       /* frames per stack kept (validation.max-profile-stacktrace-depth) */
#define EMBER_PYRO_MAX_AGE_S 3600       /* profiles older are refused (validation.reject-older-than) */

/* emberprof's own ("spy") series labels, named here, valued in pyroscope.c. */
#define EMBER_PYRO_NOWN 3
extern const char *const ember__pyro_own_names[EMBER_PYRO_NOWN];

/* Index of name among the spy labels, EMBER_PYRO_NOWN for "service_name", else -1. */
int ember__pyroscope_own_label(const char *name);

/* A character the legacy /ingest allows in an application name. */
int ember__pyroscope_ingest_app_char(char c);

/* Logs, at warning level, each tag name a 1.x server rewrites or refuses. */
struct ember__upload_log;
void ember__pyroscope_warn_names(const ember_agent_info *info, const struct ember__upload_log *log);

/* The "protocol" of a reporter sending JFR to /ingest?format=jfr (internal). */
#define EMBER__PYRO_JFR 100

/* Spool item kinds: which endpoint a stored body is for. */
#define EMBER_PYRO_KIND_PUSH 0x50555348u   /* "PUSH" */
#define EMBER_PYRO_KIND_INGEST 0x494e4753u /* "INGS" */
#define EMBER_PYRO_KIND_JFR 0x4a465249u    /* "JFRI": /ingest?format=jfr, multipart */

typedef struct ember__pyro_label {
	const char *name;
	const char *value;
} ember__pyro_label;

/*
 * The __name__ of a profile type ("cpu" -> "process_cpu", "wall" ->
 * "wall", "memory"/"heap"/"alloc" -> "memory", "mutex", "block"), or NULL
 * for a type Pyroscope does not know.
 */
const char *ember__pyroscope_metric(const char *profile_type);

/*
 * Checks the application name and tags of `info` against the server's
 * rules for the given protocol: valid UTF-8, name and value lengths,
 * non-empty values, no name starting with "__", at most
 * EMBER_PYRO_MAX_LABELS label names per series counting emberprof's own
 * (and thread_id/thread_name when on); for the legacy /ingest, an
 * application name made of [A-Za-z0-9_.-/]. Returns 0 or
 * EMBER_ERR_INVALID with a message naming the offending label.
 */
int ember__pyroscope_check_info(const ember_agent_info *info, int protocol);

/*
 * The number of label names a series of profile type `type` ("cpu",
 * "wall", "memory") will carry on a Pyroscope 1.x server for this agent
 * and protocol (EMBER_PYROSCOPE_PUSH, EMBER_PYROSCOPE_INGEST or
 * EMBER__PYRO_JFR), dynamic labels aside; `why` (may be NULL) gets which
 * settings contribute how many, for messages.
 */
size_t ember__pyroscope_label_count(const ember_agent_info *info, int protocol, const char *type,
				    char *why, size_t cap);

/*
 * What a Pyroscope 1.x server does with a label name (as of v1.21.1,
 * pkg/validation/validate.go SanitizeLegacyLabelName, with label
 * sanitization on, its default): EMBER_PYRO_NAME_OK, _REWRITTEN (it has
 * dots, stored with '_' in their place; *out gets that name, cap bytes)
 * or _REFUSED (other characters, or a leading digit: the push is refused
 * with 400). Current servers (label sanitization off by default) accept
 * any UTF-8 name.
 */
enum { EMBER_PYRO_NAME_OK, EMBER_PYRO_NAME_REWRITTEN, EMBER_PYRO_NAME_REFUSED };
int ember__pyroscope_legacy_name(const char *name, char *out, size_t cap);

/*
 * The deepest stack the Pyroscope reporter `r` lets through (the server
 * keeps EMBER_PYRO_MAX_DEPTH frames and cuts the leaf side beyond), or 0
 * for any other reporter.
 */
unsigned ember__reporter_max_depth(const ember_reporter *r);
/* The same for the reporters inside an ember_reporter_multi() (multi.c). */
unsigned ember__multi_max_depth(const ember_reporter *r);

/* The age limit of options o in ms (max_age_s: 0 = the default, UINT_MAX = none -> 0). */
uint64_t ember__pyroscope_max_age_ms(const ember_pyroscope_options *o);

/* Refuses (EMBER_ERR_INVALID, naming both settings) a reporting interval at
 * or above the server's age limit: every window would be too old. */
int ember__pyroscope_check_age(unsigned interval_ms, uint64_t max_age_ms);

/* Checks a tenant id (X-Scope-OrgID): 1..150 of [A-Za-z0-9!-_.*'()], not "." or "..". */
int ember__pyroscope_check_tenant(const char *tenant);

/*
 * Encodes a push.v1.PushRequest with one series (the given labels, in
 * order) holding one sample (raw_profile = pprof[0..len), ID = id).
 * *out is malloc'd, the caller's. Returns 0 or EMBER_ERR_NOMEM.
 */
int ember__pyroscope_push_body(const ember__pyro_label *labels, size_t nlabels,
			       const uint8_t *pprof, size_t len, const char *id, uint8_t **out,
			       size_t *out_len);

/* Writes a random (version 4) UUID, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", into out[37]. */
void ember__uuid4(char out[37]);

/* Nonzero if s[0..n) is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF). */
int ember__utf8_valid(const char *s, size_t n);

#endif
