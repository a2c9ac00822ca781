/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_envstress.c - a program with one thread that changes the
 * environment in a tight loop (setenv, unsetenv, now and then clearenv
 * and the proxy variables themselves, pointed at a port that refuses),
 * while the main thread burns CPU, for SECONDS of wall time (argv[1],
 * default 5). glibc moves and frees the environ array as it grows and is
 * cleared: a thread of the agent that called getenv meanwhile could read
 * freed memory, and a libcurl that read the proxy variables live would
 * send to the wrong proxy. Exits 0 with "envstress ok" on stdout; the
 * count of changes goes to stderr (it depends on scheduling).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "host_common.h"

static atomic_int done;

static void *churn(void *arg)
{
	long n = 0;
	char name[32];
	while (!atomic_load(&done)) {
		snprintf(name, sizeof(name), "HOST_ENVSTRESS_%ld", n % 4096);
		if (setenv(name, "some value long enough to matter", 1) != 0) {
			perror("setenv");
			exit(2);
		}
		if (n % 3 == 0)
			unsetenv(name);
		if (n % 1000 == 0) {
			setenv("https_proxy", "http://127.0.0.1:1", 1);
			setenv("HTTPS_PROXY", "http://127.0.0.1:1", 1);
			setenv("all_proxy", "http://127.0.0.1:1", 1);
			setenv("no_proxy", "", 1);
			setenv("SSL_CERT_FILE", "/nonexistent/ca.pem", 1);
		}
		if (n % 20000 == 0) { /* the array freed and started again */
			clearenv();
			setenv("PATH", "/usr/bin:/bin", 1);
		}
		n++;
	}
	*(long *)arg = n;
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	long n = 0;
	pthread_t th;
	if (pthread_create(&th, NULL, churn, &n) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		return 2;
	}
	burn_cpu(seconds);
	atomic_store(&done, 1);
	pthread_join(th, NULL);
	fprintf(stderr, "environment changes %ld\n", n);
	printf("envstress ok\n");
	return 0;
}
