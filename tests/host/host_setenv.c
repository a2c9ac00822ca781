/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_setenv.c - a program that changes its environment all the while
 * (git sets GIT_* variables as it starts): adds variables for 0.4 s of
 * wall time, one after another, so that glibc keeps growing (reallocating,
 * and past the mmap threshold unmapping) the environ array. An agent that
 * read the live environment on its own thread meanwhile (getenv is not
 * safe against setenv) would walk a freed array: CI saw git commit crash
 * so. Exits 0 with "setenv ok N" on stdout.
 */
#include <stdio.h>
#include <stdlib.h>

#include "host_common.h"

int main(void)
{
	double end = host_now() + 0.4;
	long n = 0;
	char name[32];
	while (host_now() < end) {
		snprintf(name, sizeof(name), "HOST_SETENV_%ld", n++);
		if (setenv(name, "x", 1) != 0) {
			perror("setenv");
			return 2;
		}
		if (n % 30000 == 0) { /* start again: keep the array large but bounded */
			clearenv();
			setenv("PATH", "/usr/bin:/bin", 1);
		}
	}
	printf("setenv ok %ld\n", n);
	return 0;
}
