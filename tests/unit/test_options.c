/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_options.c - the table of environment variables (src/agent/options.c)
 * against itself, the documentation and the source tree:
 *  - every row is well formed (unique name, a parser for its kind, a
 *    message for what can be rejected, help for a `run` option);
 *  - every variable in the table is documented in docs/CONFIG.md and in a
 *    man page (docs/man/emberprof.1 or emberprof.3);
 *  - every EMBERPROF_* name written in docs/CONFIG.md, the man pages or
 *    any file of the source tree is a row of the table, or one of the
 *    names below that are not variables.
 * Needs EMBER_TEST_SRCDIR (set by CTest).
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "agent/options.h"

/* EMBERPROF_* names that are not environment variables. */
static const char *const not_variables[] = {
	"EMBERPROF_H",           /* include/emberprof.h's include guard */
	"EMBERPROF_EVENT_H",     /* include/emberprof_event.h's */
	"EMBERPROF_UV_H",        /* include/emberprof_uv.h's */
	"EMBERPROF_0",           /* the version node of src/emberprof*.map */
	"EMBERPROF_DATA",        /* the flame page's data marker (src/flame/) */
	"EMBERPROF_SAMPEL_RATE", /* misspelt on purpose: tests/cli/test_bad_env.sh */
};

static const char *srcdir;

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			char *nb = realloc(buf, 2 * cap + 1);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (buf)
		buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static int name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether `text` mentions `name` as a whole word. */
static int mentions(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = text; (p = strstr(p, name)) != NULL; p += n)
		if ((p == text || !name_char(p[-1])) && !name_char(p[n]))
			return 1;
	return 0;
}

static void read_doc(const char *rel, char **out)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", srcdir, rel);
	*out = slurp(path, NULL);
	CHECK(*out != NULL);
}

static void test_rows(void)
{
	CHECK(ember__noptions > 40);
	for (size_t i = 0; i < ember__noptions; i++) {
		const ember__option *o = &ember__options[i];
		CHECK(o->name != NULL);
		if (!o->name)
			continue;
		int foreign = (o->flags & EMBER__OPTF_FOREIGN) != 0;
		if (foreign ? strncmp(o->name, "PYROSCOPE_", 10) != 0
			    : strncmp(o->name, "EMBERPROF_", 10) != 0)
			fprintf(stderr, "row %s: wrong prefix\n", o->name);
		CHECK(foreign ? !strncmp(o->name, "PYROSCOPE_", 10) : !strncmp(o->name, "EMBERPROF_", 10));
		CHECK(ember__opt_find(o->name) == o); /* unique */
		if (o->kind == EMBER__OPT_CHOICE)
			CHECK(o->choices && o->choices[0].name);
		if (o->kind == EMBER__OPT_CUSTOM)
			CHECK(o->parse != NULL);
		if (o->kind != EMBER__OPT_TEXT && o->reader != EMBER__OPT_ELSEWHERE &&
		    o->reader != EMBER__OPT_ASPROF)
			CHECK(o->expect != NULL); /* what a rejection says was expected */
		if (o->reader == EMBER__OPT_ELSEWHERE || o->reader == EMBER__OPT_ASPROF)
			CHECK(o->where != NULL);
		if (o->opt) {
			CHECK(o->help != NULL);
			CHECK(!o->opt_arg || o->values != NULL);
		}
		if (o->fallback_of) {
			CHECK(foreign);
			CHECK(ember__opt_find(o->fallback_of) != NULL);
		}
		if (o->store != EMBER__STORE_NONE)
			CHECK(o->apply == NULL);
	}
}

/* Every variable is documented in CONFIG.md and a man page. */
static void test_documented(void)
{
	char *config, *man1, *man3;
	read_doc("docs/CONFIG.md", &config);
	read_doc("docs/man/emberprof.1", &man1);
	read_doc("docs/man/emberprof.3", &man3);
	if (!config || !man1 || !man3)
		goto out;
	for (size_t i = 0; i < ember__noptions; i++) {
		const char *name = ember__options[i].name;
		if (!mentions(config, name)) {
			fprintf(stderr, "%s is not in docs/CONFIG.md\n", name);
			CHECK(mentions(config, name));
		}
		if (ember__options[i].flags & EMBER__OPTF_FOREIGN)
			continue; /* Pyroscope's names: CONFIG.md's Pyroscope section */
		if (!mentions(man1, name) && !mentions(man3, name)) {
			fprintf(stderr, "%s is in neither docs/man/emberprof.1 nor emberprof.3\n", name);
			CHECK(mentions(man1, name) || mentions(man3, name));
		}
	}
out:
	free(config);
	free(man1);
	free(man3);
}

static int unknown_names;

/* Every EMBERPROF_ name in one file is a row (or not a variable). */
static void check_file(const char *path, const char *text)
{
	static const char prefix[] = "EMBERPROF_";
	for (const char *p = text; (p = strstr(p, prefix)) != NULL; p++) {
		if (p > text && name_char(p[-1]))
			continue; /* part of another name (LIBEMBERPROF_...) */
		size_t n = sizeof(prefix) - 1;
		while (name_char(p[n]))
			n++;
		if (n == sizeof(prefix) - 1)
			continue; /* the prefix alone */
		char name[128];
		snprintf(name, sizeof(name), "%.*s", (int)(n < sizeof(name) - 1 ? n : sizeof(name) - 1), p);
		int known = ember__opt_find(name) != NULL;
		if (name[strlen(name) - 1] == '_') /* a family: EMBERPROF_S3_* */
			for (size_t i = 0; i < ember__noptions && !known; i++)
				known = !strncmp(ember__options[i].name, name, strlen(name));
		for (size_t i = 0; i < sizeof(not_variables) / sizeof(not_variables[0]); i++)
			known |= !strcmp(name, not_variables[i]);
		if (!known) {
			fprintf(stderr, "%s: %s is not a row of the table of variables "
				"(src/agent/options.c)\n", path, name);
			unknown_names++;
		}
	}
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (type == FTW_D && (!strcmp(base, ".git") || !strncmp(base, "build", 5)))
		return FTW_SKIP_SUBTREE;
	if (type != FTW_F || st->st_size > (8 << 20))
		return FTW_CONTINUE;
	char *text = slurp(path, NULL);
	if (text) {
		check_file(path + strlen(srcdir) + 1, text);
		free(text);
	}
	return FTW_CONTINUE;
}

static void test_every_name_is_a_row(void)
{
	static const char *const dirs[] = {"src", "cli", "include", "tools", "tests", "docs",
					   "bench", "scripts", "examples", "demo", "CMakeLists.txt",
					   "README.md"};
	unknown_names = 0;
	int scanned = 0;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", srcdir, dirs[i]);
		struct stat st;
		if (stat(path, &st) < 0)
			continue;
		scanned++;
		CHECK(nftw(path, visit, 16, FTW_PHYS | FTW_ACTIONRETVAL) == 0);
	}
	CHECK(scanned >= 4);
	CHECK_EQ_INT(unknown_names, 0);
}

int main(void)
{
	srcdir = getenv("EMBER_TEST_SRCDIR");
	if (!srcdir) {
		printf("SKIP: EMBER_TEST_SRCDIR is not set (run through ctest)\n");
		return 77;
	}
	RUN(test_rows);
	RUN(test_documented);
	RUN(test_every_name_is_a_row);
	return CHECK_DONE();
}
