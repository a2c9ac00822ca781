#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# spdx-add.sh - gives every source file of ours its licence line:
#   /* SPDX-License-Identifier: Apache-2.0 */   C, C++, assembler (.S), Java
#   // SPDX-License-Identifier: Apache-2.0      JavaScript
#   # SPDX-License-Identifier: Apache-2.0       shell, Python, CMake, Makefiles
#   <!-- SPDX-License-Identifier: Apache-2.0 --> HTML
# as the first line, or right after a #! line (and a Python coding line) or
# an HTML <!DOCTYPE>. Idempotent: a file that has the line is left alone,
# so it can be re-run after any merge.
#
# Usage: spdx-add.sh [--check] [SRCDIR]
#   Without --check, adds the line where it is missing and lists those files.
#   With --check, changes nothing: lists every source file lacking the line
#   and exits 1 if there is one (tests/CMakeLists.txt runs it as a test).
# The files are git's tracked files in a git checkout, else a find over
# SRCDIR (default: this script's repository). Not ours, or not source, and
# so left out: debian/ (packaging), fuzz corpora and other test data (only
# the extensions below count), node_modules, build directories.
set -u
check=0
if [ "${1:-}" = --check ]; then
	check=1
	shift
fi
src=$(cd "${1:-$(dirname "$0")/..}" && pwd -P) || exit 2
cd "$src" || exit 2
tag='SPDX-License-Identifier: Apache-2.0'

# The candidate files, one a line, relative to $src.
list_files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
		[ "$(git rev-parse --show-toplevel)" = "$src" ]; then
		git ls-files
	else
		find . -type d \( -name .git -o -name node_modules -o -name 'build*' -o -name 'obj-*' \) -prune \
			-o -type f -print | sed 's|^\./||'
	fi
}

# The comment style of a file: c, slash, hash, html, or nothing (not ours
# to mark).
style_of() {
	case "$1" in
	debian/* | */node_modules/* | */corpus*/*) return ;;
	esac
	case "${1##*/}" in
	*.c | *.h | *.cc | *.cpp | *.S | *.java) echo c ;;
	*.js) echo slash ;;
	*.sh | *.py | *.cmake | *.cmake.in | CMakeLists.txt | Makefile) echo hash ;;
	*.html) echo html ;;
	*.*) ;;
	*) # an extensionless script: by its #! line
		case "$(head -c 100 "$1" 2>/dev/null | head -n 1)" in
		'#!'*sh* | '#!'*python*) echo hash ;;
		'#!'*node*) echo slash ;;
		esac ;;
	esac
}

# Whether the file has the line where it belongs (its first three lines).
has_tag() {
	head -n 3 "$1" | grep -q "$tag"
}

# How many leading lines go before the SPDX line.
lines_before() {
	local f=$1 style=$2 first second
	first=$(head -n 1 "$f")
	second=$(sed -n 2p "$f")
	case "$style" in
	hash | slash)
		case "$first" in
		'#!'*)
			case "$second" in
			'# '*coding[:=]*) echo 2 ;;
			*) echo 1 ;;
			esac ;;
		*) echo 0 ;;
		esac ;;
	html)
		case "$first" in
		'<!DOCTYPE'* | '<!doctype'*) echo 1 ;;
		*) echo 0 ;;
		esac ;;
	*) echo 0 ;;
	esac
}

add_tag() {
	local f=$1 style=$2 n line tmp
	case "$style" in
	c) line="/* $tag */" ;;
	slash) line="// $tag" ;;
	hash) line="# $tag" ;;
	html) line="<!-- $tag -->" ;;
	esac
	n=$(lines_before "$f" "$style")
	tmp=$(mktemp "$f.spdx.XXXXXX") || return 1
	{
		head -n "$n" "$f"
		printf '%s\n' "$line"
		tail -n +"$((n + 1))" "$f"
	} >"$tmp" && chmod --reference="$f" "$tmp" && mv "$tmp" "$f" || {
		rm -f "$tmp"
		return 1
	}
}

missing=0
while IFS= read -r f; do
	[ -f "$f" ] || continue
	style=$(style_of "$f")
	[ -n "$style" ] || continue
	has_tag "$f" && continue
	missing=$((missing + 1))
	if [ $check -eq 1 ]; then
		echo "no SPDX line: $f"
	else
		add_tag "$f" "$style" || { echo "spdx-add.sh: could not rewrite $f" >&2; exit 1; }
		echo "added: $f"
	fi
done < <(list_files)

if [ $check -eq 1 ] && [ $missing -gt 0 ]; then
	echo "$missing source file(s) without '$tag' in their first lines: run scripts/spdx-add.sh"
	exit 1
fi
[ $check -eq 1 ] && echo "every source file has its SPDX line"
exit 0
