#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test_install.sh - installs the build into a temporary prefix and uses it
# as a user would, from outside the source tree:
#   - the files a packager expects are there (GNUInstallDirs layout);
#   - a C program builds with `pkg-config --cflags --libs emberprof` and
#     runs against the installed library; so does a CMake project using
#     find_package(emberprof REQUIRED) and emberprof::emberprof;
#   - the prefix is moved elsewhere, and the installed `emberprof run`
#     still finds its preload library (relative to its executable): it runs
#     /bin/true, and profiles the installed demo source, built from there;
#   - DESTDIR staging puts the files under DESTDIR with the final prefix in
#     the .pc file;
#   - nothing installed refers to the build or the source directory
#     (RUNPATH/RPATH, the .pc and CMake files, strings in the binaries).
# CTest passes EMBER_TEST_BINDIR, EMBER_TEST_SRCDIR, EMBER_INSTALL_LIBDIR
# (relative, as GNUInstallDirs chose), EMBER_TEST_SANITIZE.
set -u
: "${EMBER_TEST_BINDIR:?}" "${EMBER_TEST_SRCDIR:?}" "${EMBER_INSTALL_LIBDIR:?}"

case "${EMBER_TEST_SANITIZE:-OFF}" in
ON | on | 1 | TRUE | true)
	echo "SKIP: a sanitizer build is not installable (its library needs the ASan runtime)"
	exit 77 ;;
esac
for tool in pkg-config cmake readelf objcopy cc; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not found"; exit 77; }
done

T=$(mktemp -d "${TMPDIR:-/tmp}/ember-install-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
for v in $(env | sed -n 's/^\(EMBERPROF_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export EMBERPROF_UNWIND_CACHE=off # no unwind-table cache in the home directory (tests/table_cache/ctest_env.cmake)
unset LD_PRELOAD LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH
BIN=$(cd "$EMBER_TEST_BINDIR" && pwd -P)
SRC=$(cd "$EMBER_TEST_SRCDIR" && pwd -P)
LIBDIR=$EMBER_INSTALL_LIBDIR
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
step() { echo "== $*"; }

step "install into a temporary prefix"
P=$T/prefix
cmake --install "$BIN" --prefix "$P" >"$T/install.log" 2>&1 || {
	cat "$T/install.log" >&2; echo "FAIL: cmake --install" >&2; exit 1; }
for f in bin/emberprof \
	"$LIBDIR/libemberprof.so" "$LIBDIR/libemberprof.so.0" \
	"$LIBDIR/libemberprof_noalloc.so" "$LIBDIR/libemberprof_noalloc.so.0" \
	include/emberprof.h include/emberprof_uv.h include/emberprof_event.h \
	"$LIBDIR/pkgconfig/emberprof.pc" "$LIBDIR/pkgconfig/emberprof-uv.pc" \
	"$LIBDIR/pkgconfig/emberprof-event.pc" \
	"$LIBDIR/cmake/emberprof/emberprofConfig.cmake" \
	"$LIBDIR/cmake/emberprof/emberprofConfigVersion.cmake" \
	"$LIBDIR/cmake/emberprof/emberprofTargets.cmake" \
	share/man/man1/emberprof.1 share/man/man3/emberprof.3 share/man/man3/emberprof.h.3 \
	share/doc/emberprof/CONFIG.md share/doc/emberprof/examples/demo.c; do
	[ -e "$P/$f" ] || fail "not installed: $f"
done
soname=$(readelf -d "$P/$LIBDIR/libemberprof.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libemberprof.so.0 ] || fail "SONAME of libemberprof.so is '$soname', not libemberprof.so.0"
# The symbol version map is kept: the API is exported under a version node.
readelf --dyn-syms -W "$P/$LIBDIR/libemberprof.so" | grep -q ' ember_agent_start@@' ||
	fail "ember_agent_start is not exported with a symbol version"
if readelf --dyn-syms -W "$P/$LIBDIR/libemberprof.so" | awk '$5 == "GLOBAL" && $7 != "UND" && $7 != "ABS" {print $8}' |
	grep -v -E '^(ember_|EMBER)|^(malloc|free|calloc|realloc|memalign|posix_memalign|aligned_alloc|valloc|pvalloc|pthread_create|malloc_usable_size|cfree|reallocarray|_exit|_Exit|sigaction|signal|bsd_signal|sysv_signal|sigprocmask|pthread_sigmask|sigwait|sigwaitinfo|sigtimedwait|signalfd|dlclose|raise|pthread_kill|__assert_fail|getenv|secure_getenv|gmtime|gmtime_r|socketpair|execve|execv|execvp|execvpe|execl|execle|execlp|fexecve|execveat)@' |
	grep -q .; then
	fail "libemberprof.so exports names outside its API"
fi

step "nothing installed refers to the build or source directory"
for f in $(find "$P" -type f); do
	if readelf -h "$f" >/dev/null 2>&1; then
		if readelf -d "$f" 2>/dev/null | grep -E 'RUNPATH|RPATH'; then
			fail "$f has a RUNPATH/RPATH"
		fi
		# Debug info may name the sources (as any -g build); the code and
		# data may not.
		objcopy --strip-debug "$f" "$T/stripped" 2>/dev/null || cp "$f" "$T/stripped"
		if grep -a -q -e "$BIN" -e "$SRC" "$T/stripped"; then
			fail "$f refers to the build or source directory"
		fi
	elif grep -q -e "$BIN" -e "$SRC" "$f"; then
		fail "$f refers to the build or source directory: $(grep -n -e "$BIN" -e "$SRC" "$f" | head -3)"
	fi
done
grep -q "^prefix=$P\$" "$P/$LIBDIR/pkgconfig/emberprof.pc" ||
	fail "emberprof.pc does not have prefix=$P: $(grep '^prefix' "$P/$LIBDIR/pkgconfig/emberprof.pc")"

# The consumers live outside the source tree.
mkdir -p "$T/consumer/consumer-cmake"
cp "$SRC/tests/install/consumer.c" "$T/consumer/"
cp "$SRC/tests/install/consumer-cmake/CMakeLists.txt" "$T/consumer/consumer-cmake/"
cd "$T/consumer" || exit 1

step "a C program built with pkg-config"
export PKG_CONFIG_PATH="$P/$LIBDIR/pkgconfig"
cflags=$(pkg-config --cflags emberprof) && libs=$(pkg-config --libs emberprof) ||
	fail "pkg-config emberprof"
pkg-config --exact-version="$(sed -n 's/^#define EMBER_VERSION_STRING "\(.*\)"$/\1/p' "$P/include/emberprof.h")" emberprof ||
	fail "emberprof.pc's version is not the header's"
# shellcheck disable=SC2086
if cc -Wall -Wextra -Werror -o consumer_pc consumer.c $cflags $libs; then
	LD_LIBRARY_PATH="$P/$LIBDIR" ./consumer_pc "$T/out_pc" || fail "the pkg-config consumer failed"
	LD_LIBRARY_PATH="$P/$LIBDIR" ldd ./consumer_pc | grep -q "$P/$LIBDIR/libemberprof.so.0" ||
		fail "the pkg-config consumer did not load the installed library"
	ls "$T/out_pc"/*.pb.gz >/dev/null 2>&1 || fail "the pkg-config consumer wrote no profile"
else
	fail "the pkg-config consumer does not compile"
fi
for helper in uv:libuv event:libevent; do
	if pkg-config --exists "${helper#*:}"; then
		pkg-config --cflags "emberprof-${helper%%:*}" >/dev/null || fail "pkg-config emberprof-${helper%%:*}"
	fi
done
unset PKG_CONFIG_PATH

step "a CMake project with find_package(emberprof REQUIRED)"
if cmake -S consumer-cmake -B build-cmake -DCMAKE_PREFIX_PATH="$P" >"$T/cmake.log" 2>&1 &&
	cmake --build build-cmake >>"$T/cmake.log" 2>&1; then
	LD_LIBRARY_PATH="$P/$LIBDIR" ./build-cmake/consumer "$T/out_cmake" || fail "the CMake consumer failed"
	ls "$T/out_cmake"/*.pb.gz >/dev/null 2>&1 || fail "the CMake consumer wrote no profile"
	grep -q "emberprof_DIR:PATH=$P/$LIBDIR/cmake/emberprof" build-cmake/CMakeCache.txt ||
		fail "find_package did not find the installed package"
else
	cat "$T/cmake.log" >&2
	fail "the CMake consumer does not configure or build"
fi
# The version file refuses an incompatible request.
mkdir -p "$T/consumer/v99"
printf 'cmake_minimum_required(VERSION 3.18)\nproject(v C)\nfind_package(emberprof 99 REQUIRED)\n' \
	>"$T/consumer/v99/CMakeLists.txt"
if cmake -S v99 -B build-v99 -DCMAKE_PREFIX_PATH="$P" >/dev/null 2>&1; then
	fail "find_package(emberprof 99) succeeded against version 0.x"
fi

step "the installed emberprof, from a moved prefix"
M=$T/moved
mv "$P" "$M"
EMBERPROF_SERVER_AUTH_TOKEN=tok-s3cr3t-1 AWS_SECRET_ACCESS_KEY=aws-s3cr3t-2 \
	"$M/bin/emberprof" version >"$T/version.out" 2>&1 || fail "emberprof version failed"
cat "$T/version.out"
! grep -q 's3cr3t' "$T/version.out" || fail "emberprof version prints a secret from the environment"
grep -E -q '^commit: ([0-9a-f]{40}(-dirty)?|unknown \(not built from a git checkout\))$' "$T/version.out" ||
	fail "emberprof version: no commit line"
if git -C "$SRC" rev-parse HEAD >/dev/null 2>&1; then
	grep -q "^commit: $(git -C "$SRC" rev-parse HEAD)" "$T/version.out" ||
		fail "emberprof version does not name the source's commit $(git -C "$SRC" rev-parse HEAD)"
fi
for part in libcurl libzip jemalloc "perf events" DWARF; do
	grep -q "^  $part" "$T/version.out" || fail "emberprof version does not report $part"
done
grep -q "^preloads: $M/$LIBDIR/libemberprof_noalloc.so" "$T/version.out" ||
	fail "the moved emberprof does not preload from its own prefix: $(grep preloads "$T/version.out")"
"$M/bin/emberprof" run -q -o "$T/out_true" -- /bin/true || fail "emberprof run -- /bin/true: exit $?"
cc -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -pthread -o demo \
	"$M/share/doc/emberprof/examples/demo.c" || fail "the installed demo.c does not compile"
if [ -x demo ]; then
	# the library, found in the moved prefix (without --engine a root run
	# would sample from outside and preload nothing)
	"$M/bin/emberprof" run -q --engine auto -r 200 -o "$T/out_demo" -- ./demo --threads 2 --seconds 1 >/dev/null ||
		fail "emberprof run -- demo: exit $?"
	"$M/bin/emberprof" top -n 5 "$T/out_demo"/*.pb.gz >"$T/top.out" 2>&1 || fail "emberprof top"
	grep -q hot_a "$T/top.out" || { cat "$T/top.out" >&2; fail "the demo's profile lacks hot_a"; }
fi

step "DESTDIR staging"
DESTDIR="$T/stage" cmake --install "$BIN" --prefix /opt/emberprof >/dev/null 2>&1 ||
	fail "DESTDIR install"
[ -x "$T/stage/opt/emberprof/bin/emberprof" ] || fail "DESTDIR: bin/emberprof not under DESTDIR"
grep -q '^prefix=/opt/emberprof$' "$T/stage/opt/emberprof/$LIBDIR/pkgconfig/emberprof.pc" ||
	fail "DESTDIR: emberprof.pc's prefix is not the final /opt/emberprof"

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)" >&2
	exit 1
fi
echo "install: all checks passed"
