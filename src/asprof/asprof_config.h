/* SPDX-License-Identifier: Apache-2.0 */
/*
 * asprof_config.h - the environment variables of the backend choice and
 * the async-profiler backend (asprof_config.c), applied by
 * ember_builder_apply_env before the reporters' variables, so that
 * EMBERPROF_OUTPUT_DIR and the Pyroscope server get the backend's format.
 */
#ifndef EMBER_ASPROF_CONFIG_H
#define EMBER_ASPROF_CONFIG_H

#include "asprof/asprof.h"
#include "emberprof.h"

/*
 * The public options (ember_builder_set_asprof_options) checked and
 * turned into the backend's settings: *out is written only on success.
 * 0 or EMBER_ERR_INVALID naming the bad field.
 */
int ember__asprof_options_to_config(const ember_asprof_options *in, ember__asprof_config *out);

/* EMBERPROF_BACKEND (into *backend, an ember_backend) and
 * EMBERPROF_ASPROF_* (into *c): 0 or EMBER_ERR_INVALID naming the
 * variable; nothing is changed on failure. */
int ember__asprof_apply_env(ember__asprof_config *c, int *backend);

#endif
