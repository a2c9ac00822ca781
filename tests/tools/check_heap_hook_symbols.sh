#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Audits the allocation hook's objects (src/heap/hook.c, livetab.c,
# sampler.c): they run inside the application's malloc and free, so every
# symbol they import must be on this allowlist - no allocation, no lock
# the hook could block on, no stdio. Like check_sigpath_symbols.sh, a new
# dependency fails this test until it is removed or reviewed and added
# here with the reason. Given every object of ember_core; checks only the
# hook's.
set -euo pipefail
allowed=(
  _GLOBAL_OFFSET_TABLE_
  __errno_location            # errno save/restore
  __libc_malloc __libc_free __libc_calloc __libc_realloc
  __libc_memalign __libc_valloc __libc_pvalloc   # glibc's allocator: the real calls
  __libc_stack_end            # the main thread's stack top (bounds before its probe)
  __start_ember_hook_text __stop_ember_hook_text # the hook's own code range
  clock_gettime               # vDSO; the sample's timestamp and the PRNG seed
  getpid gettid               # plain system calls
  memcpy memmove memset       # plain memory
  sysconf                     # valloc's page size (reads the auxiliary vector)
  dlsym                       # once, on the first call, to find the next allocator;
                              # what it allocates comes from the static arena
  pthread_once pthread_atfork # agent side only: registering the fork handler at attach
  pthread_mutex_lock pthread_mutex_unlock # agent side only: mapping the live table once
  mmap munmap madvise         # agent side only: the live table's memory (huge pages)
  expm1                       # agent side only: ember__heap_unsample
)
objs=()
for arg in "$@"; do
  IFS=';' read -r -a parts <<< "$arg"
  for p in "${parts[@]}"; do
    case "$p" in */src/heap/hook.c.o|*/src/heap/livetab.c.o|*/src/heap/sampler.c.o) objs+=("$p") ;; esac
  done
done
[ ${#objs[@]} -eq 3 ] || { echo "expected the 3 hook objects, got ${#objs[@]}" >&2; exit 1; }
. "$(dirname "$0")/audit_lib.sh"
status=0
audit_imports "allocation hook" "${objs[@]}" || status=1
[ $status -eq 0 ] && echo "the allocation hook imports only allowed symbols (${#objs[@]} objects)"
exit $status
