/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flame_page.c - the HTML page: tools/flame/flame.html, compiled into the
 * binary by cmake/flame.cmake, with the tree's JSON put in place of its
 * data marker.
 */
#include <string.h>

#include "emberprof.h"
#include "flame/flame.h"
#include "util/error.h"

/* Generated (cmake/embed.cmake): the page's bytes, NUL-terminated. */
extern const unsigned char ember__flame_page[];
extern const unsigned long ember__flame_page_len;

#define MARKER "/*@EMBERPROF_DATA@*/"

int ember__flame_write_html(const ember__flame *fl, const struct ember__flame_diff *d, FILE *out)
{
	const char *page = (const char *)ember__flame_page;
	const char *at = strstr(page, MARKER);
	if (!at)
		return ember__error(EMBER_ERR_INVALID, "the built-in page has no data marker");
	fwrite(page, 1, (size_t)(at - page), out);
	int rc = ember__flame_write_json(fl, d, out);
	if (rc < 0)
		return rc;
	const char *rest = at + strlen(MARKER);
	fwrite(rest, 1, ember__flame_page_len - (size_t)(rest - page), out);
	return ferror(out) ? ember__error(EMBER_ERR_IO, "cannot write the page") : 0;
}
