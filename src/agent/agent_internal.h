/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent_internal.h - the agent's structures, shared by the files of
 * src/agent/ and included by no other folder (what others may use is in
 * agent/agent.h). All mutable state of an agent lives in struct
 * ember__core (core.h); the public handle types are views of it (see
 * agent.c).
 */
#ifndef EMBER_AGENT_INTERNAL_H
#define EMBER_AGENT_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "agent/agent.h"
#include "emberprof.h"
#include "engine/threads.h"
#include "engine/sigsetup.h"

struct ember__core;
struct ember_agent {
	struct ember__core *core;
};
struct ember_running {
	struct ember__core *core;
};

#endif
