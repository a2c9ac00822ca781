/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fd_hook.c - socketpair in libemberprof.so, so that the pairs the
 * libraries emberprof's threads call make for themselves are kept out of
 * the program's way, as every descriptor the agent keeps is (util/ownfd.h).
 *
 * libcurl makes a socket pair for each easy handle's internal multi handle
 * (its wake-up pair, kept as long as the handle: the uploader's lives as
 * long as the agent) and one for each name its threaded resolver looks up;
 * without SOCK_CLOEXEC and at the lowest free numbers. A profiled program
 * that then execs a command passed them to it, and a daemon that closes
 * every descriptor and reuses the numbers would have libcurl write into
 * its files (host.test_fds with a network reporter found fds 3 and 4).
 * So on a thread marked as ours (ember__env_own_thread: the agent's
 * threads and those they create, libcurl's resolver among them) the pair
 * is made with SOCK_CLOEXEC and moved to 256 or above; on every other
 * thread this is the C library's socketpair, unchanged. The connection's
 * own socket is made by the HTTP client itself (upload/http.c,
 * CURLOPT_OPENSOCKETFUNCTION). Loaded by `emberprof attach` (dlopen), the
 * library comes after libc and nothing is interposed.
 */
#include <errno.h>
#include <sys/socket.h>

#include "preload/nextsym.h"
#include "util/envsnap.h"
#include "util/ownfd.h"

#define EXPORT __attribute__((visibility("default")))

/* <sys/socket.h> declares it; exported here. */
EXPORT int socketpair(int domain, int type, int protocol, int sv[2]);

typedef int (*socketpair_fn)(int, int, int, int[2]);
static void *real_socketpair;

/* Same contract as the C library's; sv is the caller's. Not
 * async-signal-safe at its first call (dlsym), as a preloaded
 * interposer's first call never is; the C library's is. */
EXPORT int socketpair(int domain, int type, int protocol, int sv[2])
{
	socketpair_fn f = (socketpair_fn)ember__next_sym(&real_socketpair, "socketpair");
	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	if (!ember__env_is_own_thread())
		return f(domain, type, protocol, sv);
	int rc = f(domain, type | SOCK_CLOEXEC, protocol, sv);
	if (rc == 0) {
		sv[0] = ember__ownfd_raise(sv[0]);
		sv[1] = ember__ownfd_raise(sv[1]);
	}
	return rc;
}
