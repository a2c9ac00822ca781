/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redact.c - what of a value a message may show (redact.h).
 */
#include "util/redact.h"

#include <string.h>

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive: does s contain word? */
static int has_word(const char *s, const char *word)
{
	size_t n = strlen(word);
	for (; *s; s++) {
		size_t i = 0;
		while (i < n && s[i] && lower(s[i]) == word[i])
			i++;
		if (i == n)
			return 1;
	}
	return 0;
}

int ember__redact_is_secret_name(const char *name)
{
	static const char *const words[] = {"pass", "secret", "token", "auth", "credential",
					    "key", "cookie", "session", "signature", "header",
					    "private"};
	if (!name)
		return 0;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (has_word(name, words[i]))
			return 1;
	return 0;
}

/* Appends [s, s+n) to out at *len, keeping room for the NUL. */
static void put(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
	if (*len + 1 >= cap)
		return;
	if (n > cap - 1 - *len)
		n = cap - 1 - *len;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = '\0';
}

const char *ember__redact_url(const char *url, char *out, size_t cap)
{
	size_t len = 0;
	if (!cap)
		return out;
	out[0] = '\0';
	if (!url)
		return out;
	const char *p = url, *auth = strstr(url, "://");
	auth = auth ? auth + 3 : url;
	put(out, cap, &len, url, (size_t)(auth - url));
	/* The authority ends at the first '/', '?' or '#'; userinfo is what
	 * comes before its last '@'. */
	size_t alen = strcspn(auth, "/?#");
	const char *at = NULL;
	for (size_t i = 0; i < alen; i++)
		if (auth[i] == '@')
			at = auth + i;
	p = auth;
	if (at) {
		put(out, cap, &len, EMBER_REDACTED "@", strlen(EMBER_REDACTED "@"));
		p = at + 1;
	}
	size_t rest = strcspn(p, "?#");
	put(out, cap, &len, p, rest);
	if (p[rest]) {
		put(out, cap, &len, p + rest, 1); /* '?' or '#' */
		put(out, cap, &len, EMBER_REDACTED, strlen(EMBER_REDACTED));
	}
	return out;
}

const char *ember__redact_value(const char *name, const char *value, char *out, size_t cap)
{
	if (!cap)
		return out;
	if (!value)
		value = "";
	if (ember__redact_is_secret_name(name)) {
		size_t len = 0;
		out[0] = '\0';
		put(out, cap, &len, EMBER_REDACTED, strlen(EMBER_REDACTED));
		return out;
	}
	if (strstr(value, "://") || strchr(value, '@'))
		return ember__redact_url(value, out, cap);
	size_t len = 0;
	out[0] = '\0';
	put(out, cap, &len, value, strlen(value));
	return out;
}

const char *ember__redact_header(const char *line, char *out, size_t cap)
{
	size_t len = 0;
	if (!cap)
		return out;
	out[0] = '\0';
	size_t n = line ? strcspn(line, ": \t") : 0;
	if (n == 0 || line[n] != ':') {
		put(out, cap, &len, EMBER_REDACTED, strlen(EMBER_REDACTED));
		return out;
	}
	put(out, cap, &len, line, n);
	put(out, cap, &len, ": " EMBER_REDACTED, strlen(": " EMBER_REDACTED));
	return out;
}
