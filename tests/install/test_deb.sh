#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test_deb.sh - builds the Debian packages from this tree
# (dpkg-buildpackage -us -uc -b, debian/), runs lintian on them (no errors
# allowed), installs them with dpkg -i, and runs the installed
# `emberprof run -- /bin/true` and `emberprof version`; then removes them
# again, unless they were installed before the test.
# Run from `make test` (test-package); exits 77 with the reason when it
# cannot run (not root, tools missing).
# Usage: test_deb.sh [SRCDIR]
set -u
SRC=$(cd "${1:-$(dirname "$0")/../..}" && pwd -P)
for tool in dpkg-buildpackage dh lintian git; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not found (scripts/setup-deps.sh installs it)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: dpkg -i needs root"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/ember-deb-XXXXXX") || exit 1
installed_by_us=""
cleanup() {
	[ -n "$installed_by_us" ] && dpkg --purge $installed_by_us >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Build from a copy of the tracked and new files, so that no build
# directory of the tree goes into the package and the outputs (written to
# the parent directory) stay in $T.
mkdir "$T/emberprof"
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard) |
	(cd "$SRC" && xargs -0 cp --parents -t "$T/emberprof" 2>/dev/null)
[ -f "$T/emberprof/debian/control" ] || { echo "FAIL: could not copy the tree" >&2; exit 1; }
echo "== dpkg-buildpackage -us -uc -b"
if ! (cd "$T/emberprof" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
	dpkg-buildpackage -us -uc -b >"$T/build.log" 2>&1); then
	tail -40 "$T/build.log" >&2
	echo "FAIL: dpkg-buildpackage" >&2
	exit 1
fi
debs=$(ls "$T"/*.deb)
echo "$debs"

echo "== lintian"
lintian --tag-display-limit 0 "$T"/*.deb >"$T/lintian.log" 2>&1
cat "$T/lintian.log"
if grep -q '^E: ' "$T/lintian.log"; then
	fail "lintian reports errors"
fi

echo "== dpkg -i"
for p in emberprof libemberprof0 libemberprof-dev; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		installed_by_us="$installed_by_us $p"
done
if dpkg -i "$T"/*.deb >"$T/dpkg.log" 2>&1; then
	cd "$T" || exit 1
	for v in $(env | sed -n 's/^\(EMBERPROF_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
	export EMBERPROF_UNWIND_CACHE=off # no unwind-table cache in the home directory (tests/table_cache/ctest_env.cmake)
	unset LD_PRELOAD
	# /bin/true takes no sample: it runs, and writes nothing (the library)
	# or one profile of the CPU its events counted (the tree engine, which
	# puts every counted CPU-second in a profile), and says which
	/usr/bin/emberprof run -q -o "$T/true" -- /bin/true 2>"$T/true.err" ||
		fail "emberprof run -- /bin/true: exit $?"
	grep -q -e 'no profiles were written' -e '^emberprof: 1 profile written' "$T/true.err" ||
		fail "emberprof run -- /bin/true did not say what it wrote: $(cat "$T/true.err")"
	[ "$(ls "$T/true" 2>/dev/null | wc -l)" -le 1 ] ||
		fail "emberprof run -- /bin/true wrote more than one file: $(ls "$T/true")"
	# a shell loop that uses CPU does leave a profile: with the packaged
	# library preloaded, and with the default engine (as root: the tree
	# sampled from outside)
	for engine in auto default; do
		opt=--engine=$engine
		[ $engine = default ] && opt=-q
		/usr/bin/emberprof run -q "$opt" -o "$T/out-$engine" -- sh -c 'i=0; while [ $i -lt 400000 ]; do i=$((i + 1)); done' ||
			fail "emberprof run ($engine engine) -- sh -c loop: exit $?"
		ls "$T/out-$engine"/*.pb.gz >/dev/null 2>&1 ||
			fail "emberprof run ($engine engine) wrote no profile of a CPU-bound shell loop"
	done
	/usr/bin/emberprof version >"$T/version.out" || fail "emberprof version"
	cat "$T/version.out"
	grep -q '^preloads: /usr/lib/.*/libemberprof_noalloc\.so\.0' "$T/version.out" ||
		fail "the packaged emberprof does not preload the packaged library"
	pkg-config --exists emberprof || fail "pkg-config does not find the packaged emberprof.pc"
else
	cat "$T/dpkg.log" >&2
	fail "dpkg -i"
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "deb: all checks passed"
