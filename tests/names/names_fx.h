/* SPDX-License-Identifier: Apache-2.0 */
/* names_fx.h - the library of the names tests (names_lib.c). */
#ifndef EMBER_NAMES_FX_H
#define EMBER_NAMES_FX_H

#include <stddef.h>

int fx_nop(int x);
double fx_vers(long n);
void *fx_alloc(size_t n);

#endif
