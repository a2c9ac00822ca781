# SPDX-License-Identifier: Apache-2.0
# audit_lib.sh - sourced by the import audits (check_*_symbols.sh).
# audit_imports WHAT OBJ...: every symbol the objects import must be in
# the caller's `allowed` array (emberprof's own ember__* and the
# sanitizers' are always fine). Prints each violation; returns 1 if any.
audit_imports() {
  local what=$1 status=0 obj syms sym a ok
  shift
  for obj in "$@"; do
    if ! syms=$(nm -u "$obj"); then
      echo "cannot read the symbols of $obj" >&2
      status=1
      continue
    fi
    while read -r sym; do
      [ -z "$sym" ] && continue
      case "$sym" in ember__*|__asan_*|__ubsan_*|__sanitizer_*) continue ;; esac
      # aarch64: GCC's outline atomics (libgcc.a, linked in hidden): one
      # LSE instruction or an LL/SC loop each, lock-free, no calls.
      case "$sym" in __aarch64_cas[0-9]*|__aarch64_ld[a-z]*[0-9]_*|__aarch64_swp[0-9]*) continue ;; esac
      ok=0
      for a in "${allowed[@]}"; do [ "$sym" = "$a" ] && ok=1; done
      if [ $ok -eq 0 ]; then
        echo "$what object $(basename "$obj") imports '$sym', which is not on its allowlist" >&2
        status=1
      fi
    done < <(printf '%s\n' "$syms" | awk '{print $2}' | sed 's/@.*//')
  done
  return $status
}
