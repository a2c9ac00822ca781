/* SPDX-License-Identifier: Apache-2.0 */
// headers_check.cpp - the loop helpers' headers compile as C++ too (they
// are header-only and land in the application's own build). Compile-only.
#include <event2/event.h>
#include <uv.h>

#include "emberprof_event.h"
#include "emberprof_uv.h"

int ember_headers_check(void);
int ember_headers_check(void)
{
	ember_uv_watch w;
	(void)w;
	event_callback_fn f = ember__event_trampoline;
	return f != nullptr;
}
