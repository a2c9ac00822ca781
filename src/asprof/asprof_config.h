/*
 * asprof_config.h - the environment variables of the backend choice and
 * the async-profiler backend (asprof_config.c), applied by
 * ember_builder_apply_env before the reporters' variables, so that
 * EMBERPROF_OUTPUT_DIR and the Pyroscope server get the backend's format.
 */
#ifndef EMBER_ASPROF_CONFIG_H
#define EMBER_ASPROF_CONFIG_H

#include "emberprof.h"

/* EMBERPROF_BACKEND and EMBERPROF_ASPROF_*: 0 or EMBER_ERR_INVALID naming the variable. */
int ember__asprof_apply_env(ember_builder *b);

#endif
