# SPDX-License-Identifier: Apache-2.0
# Cross build for 64-bit Arm on an x86-64 Debian 12 host:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
# Compiler: Debian's gcc-aarch64-linux-gnu. Libraries: the arm64 multiarch
# -dev packages (dpkg --add-architecture arm64), found through pkg-config's
# arm64 directory. Tests run under qemu-user (CTest prefixes every test
# whose command is a target with CMAKE_CROSSCOMPILING_EMULATOR). All of it
# is installed by scripts/setup-deps.sh; `make test-aarch64` drives it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(EMBER_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${EMBER_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${EMBER_CROSS_TRIPLE}-g++)

# The cross C library lives in /usr/aarch64-linux-gnu (what the compiler
# links against); the multiarch libraries (libdw, libcurl, ...) in
# /usr/lib/aarch64-linux-gnu, which the cross gcc searches too.
set(CMAKE_FIND_ROOT_PATH /usr/${EMBER_CROSS_TRIPLE})
set(CMAKE_LIBRARY_ARCHITECTURE ${EMBER_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config must see only the arm64 .pc files.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${EMBER_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# No -L: the programs run with the multiarch libc6:arm64 (its loader is
# /lib/ld-linux-aarch64.so.1, its libraries in /lib/aarch64-linux-gnu,
# next to libdw:arm64 & co). `-L /usr/aarch64-linux-gnu` would pair the
# cross toolchain's loader with that libc - two builds of glibc whose
# private ABI differs - and pthread_create then spins forever.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
