/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfo_cmd.h - `emberprof debuginfo upload [options] FILE...`
 * (debuginfo_cmd.c): debug files to a Grafana Pyroscope server by GNU
 * build ID. Runs in the emberprof command only; not async-signal-safe.
 */
#ifndef EMBER_CLI_DEBUGINFO_CMD_H
#define EMBER_CLI_DEBUGINFO_CMD_H

#include <stdio.h>

/* argv[0] is "debuginfo". Returns the exit code: 0 all uploaded or already
 * on the server, 1 a file failed, 2 a usage error. */
int ember__cli_debuginfo(int argc, char **argv);
void ember__cli_debuginfo_usage(FILE *out);

#endif
