/* SPDX-License-Identifier: Apache-2.0 */
/*
 * options.h - every environment variable emberprof knows, in one table
 * (options.c): its name, how its value is parsed and checked, the
 * message naming what was expected, where the value goes, the
 * `emberprof run` option that sets it and the help text that option
 * shows. ember_builder_apply_env() is driven by the table, the reporters'
 * readers (env_pyroscope.c, env_s3.c) read their rows through it,
 * `emberprof help run` prints it and tests/unit/test_options.c checks it
 * against docs/CONFIG.md, the man pages and every EMBERPROF_* name in the
 * source tree. A new variable is one row.
 *
 * Values come from ember__getenv() (util/envsnap.h: the start-up
 * snapshot where the agent starts lazily), never getenv(). Nothing here
 * is async-signal-safe; the table itself is constant.
 */
#ifndef EMBER_AGENT_OPTIONS_H
#define EMBER_AGENT_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "emberprof.h"

/* How a value is parsed. */
typedef enum ember__opt_kind {
	EMBER__OPT_TEXT,     /* any string */
	EMBER__OPT_UINT,     /* decimal digits, min..max */
	EMBER__OPT_DURATION, /* util/parse.h durations in ms, min..max; min 0: "0" and "0ms" too */
	EMBER__OPT_BOOL,     /* util/parse.h booleans */
	EMBER__OPT_CHOICE,   /* one of choices[] */
	EMBER__OPT_CUSTOM,   /* parse(); then min..max on .u when max is set */
} ember__opt_kind;

/* Who reads a variable, and when. */
typedef enum ember__opt_reader {
	EMBER__OPT_BUILDER,   /* ember_builder_apply_env, first, in table order */
	EMBER__OPT_OUTPUT,    /* the same, after the backend's (it decides the format) */
	EMBER__OPT_ASPROF,    /* the backend's: src/asprof/asprof_config.c */
	EMBER__OPT_S3,        /* the S3 reporter's: env_s3.c */
	EMBER__OPT_PYRO_APP,  /* Pyroscope's names for builder settings: env_pyroscope.c */
	EMBER__OPT_SERVER,    /* the Pyroscope reporter's: env_pyroscope.c */
	EMBER__OPT_ELSEWHERE, /* another part of emberprof: `where` says which */
} ember__opt_reader;

/* Where a parsed value is stored (at `offset` in the reader's target). */
typedef enum ember__opt_store {
	EMBER__STORE_NONE, /* checked only, or apply(), or read by its reader's code */
	EMBER__STORE_UINT, /* unsigned <- .u */
	EMBER__STORE_INT,  /* int <- .i */
	EMBER__STORE_U64,  /* uint64_t <- .u */
	EMBER__STORE_STR,  /* const char * <- the value itself (owned by the environment) */
} ember__opt_store;

#define EMBER__OPTF_EMPTY_UNSET 0x1u /* "" is the same as unset */
#define EMBER__OPTF_SECRET 0x2u      /* its value is never shown */
#define EMBER__OPTF_TEST 0x4u        /* a test knob: not in `emberprof help run` */
#define EMBER__OPTF_FOREIGN 0x8u     /* another agent's name (PYROSCOPE_*), not ours */
#define EMBER__OPTF_INTERNAL 0x10u   /* set by emberprof itself, not by a user */
#define EMBER__OPTF_BY_CODE 0x20u    /* read by its reader's code, not ember__options_apply */

typedef struct ember__opt_choice {
	const char *name;
	int value;
} ember__opt_choice;

typedef union ember__opt_value {
	uint64_t u;
	int i;
	const char *s;
} ember__opt_value;

/* What apply() and the stores work on during one ember_builder_apply_env. */
typedef struct ember__opt_ctx {
	ember_builder *b;
	void *target;        /* the stores' base: &b->cfg, or a reporter's options */
	uint64_t alloc_mean; /* EMBERPROF_ALLOC_SAMPLE_BYTES, for EMBERPROF_ALLOC */
	unsigned formats;    /* EMBER_FORMAT_*: EMBERPROF_OUTPUT_FORMAT, for the output dir */
} ember__opt_ctx;

typedef struct ember__option ember__option;
/* 0, or a negative ember_err with a message naming the variable (ember__opt_bad). */
typedef int (*ember__opt_apply_fn)(ember__opt_ctx *c, const ember__option *o, const char *value,
				   ember__opt_value x);

struct ember__option {
	const char *name;
	ember__opt_reader reader;
	ember__opt_kind kind;
	unsigned flags;                   /* EMBER__OPTF_* */
	unsigned long long min, max;      /* UINT, DURATION, CUSTOM (max 0: unchecked) */
	const ember__opt_choice *choices; /* CHOICE, ending with a NULL name */
	int (*parse)(const char *s, ember__opt_value *out); /* CUSTOM: 0 or nonzero */
	const char *expect;               /* the message's reason: "expected ..." */
	ember__opt_store store;
	size_t offset;
	ember__opt_apply_fn apply;        /* instead of a store */
	const char *fallback_of;          /* FOREIGN: read only when this variable is unset or empty */
	/* documentation */
	const char *values;    /* what it takes, for the docs check and help: "HZ" */
	const char *deflt;     /* its default, as the usage shows it, or NULL */
	const char *opt;       /* the `emberprof run` option setting it ("rate"), or NULL */
	char opt_short;        /* 'r', or 0 */
	unsigned char opt_arg; /* 0: a flag, 1: takes a value, 2: optional (--opt[=V]) */
	const char *help;      /* the option's (or variable's) one-paragraph help */
	const char *where;     /* ELSEWHERE: the file that reads it */
};

/* The table, in the order each reader applies its rows. */
extern const ember__option ember__options[];
extern const size_t ember__noptions;

/* The row of `name`, or NULL. */
const ember__option *ember__opt_find(const char *name);

/* The variable's value (from util/envsnap.h), NULL when unset or, for
 * EMBER__OPTF_EMPTY_UNSET rows, empty. Owned by the environment. */
const char *ember__opt_getenv(const ember__option *o);

/*
 * Reads and parses one variable: 0 when unset (nothing else set), 1 with
 * *value and *x set, or EMBER_ERR_INVALID with the message naming the
 * variable and the row's `expect`.
 */
int ember__opt_read(const ember__option *o, const char **value, ember__opt_value *x);

/*
 * The same for a variable and the foreign one standing in for it:
 * `ours` when set (non-empty), else `theirs`; *which is the row read
 * (ours when neither is set). Either may be NULL.
 */
int ember__opt_read2(const ember__option *ours, const ember__option *theirs,
		     const ember__option **which, const char **value, ember__opt_value *x);

/* "environment variable NAME="VALUE" is invalid: WHY" (the value shown
 * redacted, or not at all for a secret row or `secret`): EMBER_ERR_INVALID. */
int ember__opt_bad(const char *name, const char *value, int secret, const char *why);
/* The same with the current ember_last_error() as the reason. */
int ember__opt_bad_last(const char *name, const char *value, int secret);

/*
 * Reads and applies every row of `reader` (BUILDER, OUTPUT, PYRO_APP,
 * SERVER, S3) that has a store or an apply(), in table order, into
 * c->target. A FOREIGN row is skipped while its fallback_of is set.
 * 0 or the first error.
 */
int ember__options_apply(ember__opt_ctx *c, ember__opt_reader reader);

/* Whether the variable `name` is set and not empty. */
int ember__opt_is_set(const char *name);

/* The readers' apply() functions the table names (env_pyroscope.c). */
int ember__pyro_apply_app_name(ember__opt_ctx *c, const ember__option *o, const char *v,
			       ember__opt_value x);
int ember__pyro_apply_labels(ember__opt_ctx *c, const ember__option *o, const char *v,
			     ember__opt_value x);
int ember__pyro_apply_tenant(ember__opt_ctx *c, const ember__option *o, const char *v,
			     ember__opt_value x);
int ember__pyro_apply_headers(ember__opt_ctx *c, const ember__option *o, const char *v,
			      ember__opt_value x);
int ember__pyro_apply_spool_dir(ember__opt_ctx *c, const ember__option *o, const char *v,
				ember__opt_value x);
int ember__pyro_parse_java_interval(const char *s, ember__opt_value *out);
int ember__pyro_parse_size(const char *s, ember__opt_value *out);

/* The Pyroscope reporter's variables (env_pyroscope.c): adds the reporter
 * when a server URL is set. 0 or an error naming the variable. */
int ember__pyroscope_apply_env(ember_builder *b);

#endif
