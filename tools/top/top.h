/* SPDX-License-Identifier: Apache-2.0 */
/*
 * top.h - the "top functions" table printed by `emberprof top FILE...` and
 * at the end of `emberprof run`, in the manner of `go tool pprof -top`.
 *
 * Rows are keyed by (function name, module basename). For a chosen sample
 * value, a row's flat is the sum over samples whose leaf frame (the
 * innermost line of the first location) is that function; its cum is the
 * sum over samples in which the function appears anywhere, counted once
 * per sample however often it recurses. Several profiles accumulate into
 * one table. A location without a function is keyed by its hex address;
 * a location without a mapping has module "?".
 *
 * The table copies every string it keeps, so profiles may be freed after
 * they are added. Not async-signal-safe; not thread-safe (one table, one
 * thread at a time).
 */
#ifndef EMBER_TOP_H
#define EMBER_TOP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

typedef struct ember__top ember__top;

/* One row, as returned by ember__top_row(). */
typedef struct ember__top_entry {
	const char *function; /* borrowed from the table until ember__top_free */
	const char *module;   /* basename of the mapping's file, "?" if none */
	int64_t flat, cum;
} ember__top_entry;

/* Creates an empty table. NULL on out-of-memory. Free with ember__top_free. */
ember__top *ember__top_new(void);

/*
 * Accumulates profile `p` (only read; the caller keeps it) using sample
 * value `value_index`. Returns 0; EMBER_ERR_INVALID (table unchanged) if
 * value_index is not below p->nvalues, if a sample refers to a missing
 * location, or if the value's unit differs from that of the profiles
 * already added; EMBER_ERR_NOMEM on out-of-memory (the table may then hold
 * part of the profile).
 */
int ember__top_add(ember__top *t, const ember__profile *p, uint32_t value_index);

/*
 * Prints the total and the top `n` rows by flat (ties by cum, then name,
 * then module) to `out`. `value_label` names the value in the header
 * (e.g. "cpu"); NULL uses the sample type of the first profile added.
 * Nanoseconds print as seconds ("1.23s"), other units as plain numbers.
 * Returns 0 or EMBER_ERR_IO if writing fails.
 */
int ember__top_print(const ember__top *t, FILE *out, size_t n, const char *value_label);

/* Frees the table and its strings. NULL is fine. */
void ember__top_free(ember__top *t);

/* Number of rows. */
size_t ember__top_count(const ember__top *t);

/* Sum of the value over every sample added (including empty stacks). */
int64_t ember__top_total(const ember__top *t);

/* The unit of the value, e.g. "nanoseconds"; "" before the first add.
 * Borrowed from the table. */
const char *ember__top_unit(const ember__top *t);

/*
 * Copies row `i` (0-based, in printing order) into *out. Returns 0, or
 * EMBER_ERR_INVALID if i >= ember__top_count(t). The strings in *out are
 * borrowed from the table.
 */
int ember__top_row(const ember__top *t, size_t i, ember__top_entry *out);

/*
 * Formats a value of the table's unit the way the table prints it into
 * buf (always NUL-terminated). Returns buf.
 */
char *ember__top_format(const ember__top *t, int64_t v, char *buf, size_t size);

#endif
