#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Audits the objects of the signal path (src/sample, src/unwind): every
# symbol they import must be on the allowlist of async-signal-safe calls.
# A new dependency (malloc, printf, a lock...) fails this test until it is
# removed or, after review, added here with the reason.
set -euo pipefail
allowed=(
  _GLOBAL_OFFSET_TABLE_
  __errno_location   # errno save/restore
  clock_gettime      # POSIX async-signal-safe; vDSO
  getpid gettid      # plain system calls
  pthread_self       # reads the thread pointer; answers the bounds probe
  mmap munmap        # only in sampbuf/threadtab init and free, on the agent thread
  read               # POSIX async-signal-safe; the perf engine reads its event's count
  __sigaction        # glibc's sigaction (POSIX async-signal-safe), past our own wrapper:
                     # a program's own signal with SIG_DFL takes its default action (sigvirt.c)
  sigemptyset sigaddset sigismember  # POSIX async-signal-safe bit operations on a local sigset_t
  memcpy memset      # POSIX async-signal-safe; calls only where the sanitizers keep them
                     # (copies of a struct sigaction / siginfo_t in sigvirt.c)
  syscall            # the bare system-call wrapper: tgkill, rt_sigprocmask and
                     # rt_tgsigqueueinfo for the program's own signals (sigvirt.c)
)
# CTest passes $<TARGET_OBJECTS:...> as one ';'-separated argument: split it.
objs=()
for arg in "$@"; do
  IFS=';' read -r -a parts <<< "$arg"
  objs+=("${parts[@]}")
done
. "$(dirname "$0")/audit_lib.sh"
status=0
audit_imports "signal path (async-signal-safe allowlist)" "${objs[@]}" || status=1
[ ${#objs[@]} -gt 0 ] || { echo "no objects given" >&2; exit 1; }
[ $status -eq 0 ] && echo "signal path imports only async-signal-safe symbols (${#objs[@]} objects)"
exit $status
