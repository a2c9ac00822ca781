/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp.h - the OpenTelemetry (OTLP/HTTP) profiles reporter: each window
 * of a process becomes one ExportProfilesServiceRequest (src/encode/
 * otlp.h) holding its CPU, wall and memory profiles, POSTed to the
 * endpoint with Content-Type application/x-protobuf (gzip'd with
 * Content-Encoding: gzip when asked), through the upload pipeline (src/
 * upload/pipeline.c: retries with backoff, the disk spool, never waiting
 * on the agent thread but for the final window's bounded flush), as the
 * Pyroscope reporter does. The environment (OTEL_* and EMBERPROF_OTLP_*)
 * is read by otlp_env.c.
 *
 * How a window's profiles reach it. The reporter takes pprof reports (one
 * per profile type), but encodes from the in-memory model the pprof was
 * made from, which the agent thread names just before handing the report
 * out (ember__otlp_window_profile) and which stays valid during the
 * report() call. The profiles of one window (same pid and seq) are added
 * to one pending request; ember__otlp_window_done(), called by the agent
 * thread once the window's reports are out, queues the request of every
 * reporter that has one. A report without a named model is refused with
 * a message (the reporter needs the agent's profiles; ember_report's
 * pprof alone is not decoded in-process).
 *
 * Nothing here is async-signal-safe.
 */
#ifndef EMBER_REPORT_OTLP_H
#define EMBER_REPORT_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "emberprof.h"
#include "encode/otlp.h"
#include "profile/profile.h"

/* Spool item kind of an OTLP request body ("OTLP"). */
#define EMBER_OTLP_KIND 0x4f544c50u

typedef struct ember__otlp_options {
	const char *url;                /* the full endpoint (http or https), required */
	const char *const *headers;     /* "Name: value" lines, checked */
	size_t nheaders;
	int gzip;                       /* compress bodies */
	unsigned timeout_ms;            /* per request, 0: 10 s (the specification's default) */
	const char *service_name;       /* NULL: the agent's application name */
	const ember__otlp_attr *resource; /* extra resource attributes (override detected ones) */
	size_t nresource;
	const char *spool_dir;          /* NULL: no spool */
	unsigned queue_len;             /* 0: 16 */
	unsigned flush_timeout_ms;      /* final window's wait, 0: 5 s */
	const char *what;               /* names the setting in messages, e.g. the variable */
} ember__otlp_options;

/* Makes the reporter; strings are copied. 0 or EMBER_ERR_INVALID (message
 * naming o->what), EMBER_ERR_NOMEM, or what the pipeline returns. */
int ember__reporter_otlp(ember_reporter *out, const ember__otlp_options *o);

/* Agent thread: the model of the report(s) handed out next (NULL: none). */
void ember__otlp_window_profile(const ember__profile *p);

/* Agent thread: the window's reports are all out; queue the pending requests. */
void ember__otlp_window_done(void);

/*
 * The detected resource attributes of process pid (0: this process):
 * process.pid, process.executable.name and .path, host.name, host.arch,
 * os.type, container.id (when /proc/<pid>/cgroup names a container).
 * Strings are written into buf (cap bytes); returns how many attributes
 * were put in out (room for 8).
 */
size_t ember__otlp_detect_resource(int32_t pid, ember__otlp_attr out[8], char *buf, size_t cap);

/* Applies the OTLP variables (otlp_env.c; docs/CONFIG.md). 0 or a
 * negative ember_err whose message names the variable. */
int ember__otlp_apply_env(ember_builder *b);

#endif
