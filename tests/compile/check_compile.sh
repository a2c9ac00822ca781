#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_compile.sh CC INCLUDE_DIR FILE EXPECT
# EXPECT=ok: FILE must compile. EXPECT=fail: it must fail, and the error
# must be reported on the line marked EXPECT-ERROR (so that an unrelated
# error cannot make the test pass). EXPECT=same: the line marked
# EXPECT-SAME must get a diagnostic, of the same level (warning or error)
# and with the same exit status, as in a copy of FILE without its
# `#include "emberprof.h"`: including the header leaves the program's own
# diagnostics alone.
set -u
cc=$1 inc=$2 file=$3 expect=$4
# No -Werror: misuse must fail with default flags.
out=$("$cc" -std=c11 -fsyntax-only -I "$inc" "$file" 2>&1)
rc=$?
if [ "$expect" = ok ]; then
  [ $rc -eq 0 ] && { echo "compiles, as it should"; exit 0; }
  echo "expected to compile:"; echo "$out"; exit 1
fi
if [ "$expect" = same ]; then
  line=$(grep -n 'EXPECT-SAME' "$file" | cut -d: -f1)
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf "$tmp"' EXIT
  base=$(basename "$file")
  # Blank the include line (line numbers stay the same).
  sed 's|^#include "emberprof.h"$||' "$file" >"$tmp/$base"
  grep -q 'emberprof.h' "$tmp/$base" && { echo "could not remove the include from $file"; exit 1; }
  ref=$("$cc" -std=c11 -fsyntax-only "$tmp/$base" 2>&1)
  ref_rc=$?
  level() { echo "$1" | grep "$base:$line:" | grep -oE '(warning|error):' | head -1; }
  want=$(level "$ref") got=$(level "$out")
  if [ -z "$want" ]; then
    echo "without the header, line $line of $base gets no diagnostic: nothing to compare"; echo "$ref"; exit 1
  fi
  if [ "$want" = "$got" ] && [ $rc -eq $ref_rc ]; then
    echo "line $line: '$got' (rc=$rc) with the header, as without it"; exit 0
  fi
  echo "line $line: '$want' (rc=$ref_rc) without the header but '$got' (rc=$rc) with it:"; echo "$out"; exit 1
fi
line=$(grep -n 'EXPECT-ERROR' "$file" | cut -d: -f1)
if [ $rc -ne 0 ] && echo "$out" | grep -q "$(basename "$file"):$line:.*error"; then
  echo "rejected at line $line, as it should be:"; echo "$out" | grep error | head -3; exit 0
fi
echo "expected a compile error at line $line of $file, got (rc=$rc):"; echo "$out"; exit 1
