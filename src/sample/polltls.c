/* SPDX-License-Identifier: Apache-2.0 */
/*
 * polltls.c - the thread-local poll block (polltls.h). Async-signal-safe:
 * only a definition.
 */
#include "sample/polltls.h"

__thread ember__polltls ember__tls_poll __attribute__((tls_model("initial-exec")));
