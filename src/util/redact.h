/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redact.h - the one place that decides what of a configuration value may
 * appear in a message, a log line or a file name (no secret ever
 * does). Every message that repeats a value the user gave - an option, an
 * environment variable, a URL, an HTTP header - passes it through here.
 *
 * Secrets are: URL userinfo (user:password@) and query strings; the values
 * of variables and headers whose names say credential (PASSWORD, SECRET,
 * TOKEN, AUTH..., CREDENTIAL, KEY, COOKIE, SESSION, SIGNATURE, and the
 * header lists); every value of an extra HTTP header. They are replaced by
 * EMBER_REDACTED.
 *
 * Pure string functions: no allocation; async-signal-safe.
 */
#ifndef EMBER_REDACT_H
#define EMBER_REDACT_H

#include <stddef.h>

#define EMBER_REDACTED "<hidden>"

/* Whether a variable, option or header named `name` holds a secret. */
int ember__redact_is_secret_name(const char *name);

/*
 * `url` with its userinfo (before '@' in the authority) and its query and
 * fragment replaced by EMBER_REDACTED, into out (cap bytes, truncated,
 * always NUL-terminated). Returns out.
 */
const char *ember__redact_url(const char *url, char *out, size_t cap);

/*
 * The value of variable or option `name` as a message may show it: the
 * value itself, EMBER_REDACTED for a secret name, or a redacted URL when
 * it contains "://" or '@'. Into out (cap bytes). Returns out.
 */
const char *ember__redact_value(const char *name, const char *value, char *out, size_t cap);

/*
 * An HTTP header line "Name: value" as "Name: <hidden>"; a line without a
 * valid "Name:" as EMBER_REDACTED alone (it may be nothing but a token).
 * Into out (cap bytes). Returns out.
 */
const char *ember__redact_header(const char *line, char *out, size_t cap);

#endif
