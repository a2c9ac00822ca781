#!/usr/bin/env bash
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
)
# CTest passes $<TARGET_OBJECTS:...> as one ';'-separated argument: split it.
objs=()
for arg in "$@"; do
  IFS=';' read -r -a parts <<< "$arg"
  objs+=("${parts[@]}")
done
status=0
for obj in "${objs[@]}"; do
  if ! syms=$(nm -u "$obj"); then
    echo "cannot read the symbols of $obj" >&2
    status=1
    continue
  fi
  while read -r sym; do
    [ -z "$sym" ] && continue
    case "$sym" in ember__*|__asan_*|__ubsan_*|__sanitizer_*) continue ;; esac
    ok=0
    for a in "${allowed[@]}"; do [ "$sym" = "$a" ] && ok=1; done
    if [ $ok -eq 0 ]; then
      echo "signal path object $(basename "$obj") imports '$sym', which is not on the async-signal-safe allowlist" >&2
      status=1
    fi
  done < <(printf '%s\n' "$syms" | awk '{print $2}' | sed 's/@.*//')
done
[ ${#objs[@]} -gt 0 ] || { echo "no objects given" >&2; exit 1; }
[ $status -eq 0 ] && echo "signal path imports only async-signal-safe symbols (${#objs[@]} objects)"
exit $status
