# SPDX-License-Identifier: Apache-2.0
# Install.cmake - `cmake --install` / `make install` rules, the pkg-config
# file and the CMake package (find_package(emberprof)), the way curl,
# libgit2, zstd and jansson ship theirs. Included once from the top-level
# CMakeLists.txt, after the targets exist. Honours GNUInstallDirs
# (CMAKE_INSTALL_LIBDIR may be lib, lib64 or lib/<multiarch>) and DESTDIR.
#
# What is installed (relative to the prefix):
#   bin/emberprof                          the command (links nothing of ours dynamically)
#   <libdir>/libemberprof.so.0.2.0 (+ .so.0, .so)            the library, SONAME libemberprof.so.0
#   <libdir>/libemberprof_noalloc.so.0.2.0 (+ .so.0, .so)    what `emberprof run` preloads
#                                                            without allocation profiling
#   include/emberprof.h, emberprof_uv.h, emberprof_event.h
#   <libdir>/pkgconfig/emberprof.pc, emberprof-uv.pc, emberprof-event.pc
#   <libdir>/cmake/emberprof/emberprof{Config,ConfigVersion,Targets*}.cmake
#   share/man/man1/emberprof.1, share/man/man3/emberprof.3 (+ emberprof.h.3)
#   share/doc/emberprof/ README.md, docs/*.md, docs/design/, examples/ (demo.c, s3_example.c)
#
# There is no public static library: the only archive the build makes
# (emberprof_internal) exposes every internal symbol for the tests and the
# CLI, and the library's allocator and pthread_create interposition only
# make sense in a shared object. Hence no Libs.private/Requires.private in
# the .pc file either (they describe a static link; the shared library
# records its own dependencies in DT_NEEDED).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(EMBER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/emberprof)

# `emberprof run` finds the library to preload relative to its own
# executable (so a moved prefix still works): bindir -> libdir.
file(RELATIVE_PATH EMBER_REL_LIBDIR ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
get_target_property(EMBER_SOVERSION emberprof SOVERSION)
target_compile_definitions(emberprof_cli PRIVATE
  EMBER_REL_LIBDIR="${EMBER_REL_LIBDIR}" EMBER_LIB_SOVERSION="${EMBER_SOVERSION}")

# Consumers of the installed package get the include directory from the
# imported target; in the build tree, the source's include/.
target_include_directories(emberprof INTERFACE
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

install(TARGETS emberprof_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime)
install(TARGETS emberprof EXPORT emberprofTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime NAMELINK_COMPONENT Development)
install(TARGETS emberprof_noalloc
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime NAMELINK_COMPONENT Development)
file(GLOB EMBER_PUBLIC_HEADERS ${CMAKE_SOURCE_DIR}/include/emberprof*.h)
install(FILES ${EMBER_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT Development)

# CMake package: imported target emberprof::emberprof (relocatable: the
# generated files compute the prefix from their own location).
install(EXPORT emberprofTargets NAMESPACE emberprof:: DESTINATION ${EMBER_CMAKE_DIR}
  COMPONENT Development)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/emberprofConfig.cmake.in
  ${CMAKE_BINARY_DIR}/emberprofConfig.cmake INSTALL_DESTINATION ${EMBER_CMAKE_DIR})
# 0.x: only the same minor version is compatible (as the SONAME promises).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/emberprofConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/emberprofConfig.cmake
  ${CMAKE_BINARY_DIR}/emberprofConfigVersion.cmake
  DESTINATION ${EMBER_CMAKE_DIR} COMPONENT Development)

# pkg-config files, written at install time so that
# `cmake --install build --prefix DIR` gets DIR, not the configured prefix.
foreach(pc emberprof emberprof-uv emberprof-event)
  install(CODE "
    set(EMBER_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    set(EMBER_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
    set(EMBER_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
    set(PROJECT_VERSION \"${PROJECT_VERSION}\")
    configure_file(\"${CMAKE_SOURCE_DIR}/cmake/${pc}.pc.in\"
      \"${CMAKE_BINARY_DIR}/pkgconfig/${pc}.pc\" @ONLY)
    file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\"
      TYPE FILE FILES \"${CMAKE_BINARY_DIR}/pkgconfig/${pc}.pc\")
  " COMPONENT Development)
endforeach()

# Documentation: the man pages (docs/man/, checked against --help and
# docs/CONFIG.md by tests/install/test_man_options.sh), the guides and the
# example programs.
install(FILES ${CMAKE_SOURCE_DIR}/docs/man/emberprof.1
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT Runtime)
install(FILES ${CMAKE_SOURCE_DIR}/docs/man/emberprof.3 ${CMAKE_SOURCE_DIR}/docs/man/emberprof.h.3
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man3 COMPONENT Development)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/docs/CONFIG.md
  ${CMAKE_SOURCE_DIR}/docs/ARCHITECTURE.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT Runtime)
# ARCHITECTURE.md's topic pages, which it links as design/*.md
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/design
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT Runtime)
install(FILES ${CMAKE_SOURCE_DIR}/demo/demo.c ${CMAKE_SOURCE_DIR}/examples/s3_example.c
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT Development)

# Last resort for `emberprof run`: the configured libdir, absolute.
target_compile_definitions(emberprof_cli PRIVATE EMBER_INSTALL_LIBDIR="${CMAKE_INSTALL_FULL_LIBDIR}")

# `emberprof version` prints the git commit it was built from (refreshed at
# every build, not only at configure time) and looks for libjemalloc in the
# multiarch directory.
add_custom_target(ember_buildinfo
  COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR} -DOUT=${CMAKE_BINARY_DIR}/buildinfo/ember_buildinfo.h
          -P ${CMAKE_SOURCE_DIR}/cmake/GitCommit.cmake
  BYPRODUCTS ${CMAKE_BINARY_DIR}/buildinfo/ember_buildinfo.h
  COMMENT "emberprof: git commit for emberprof version")
add_dependencies(emberprof_cli ember_buildinfo)
target_include_directories(emberprof_cli PRIVATE ${CMAKE_BINARY_DIR}/buildinfo)
if(CMAKE_LIBRARY_ARCHITECTURE)
  target_compile_definitions(emberprof_cli PRIVATE EMBER_MULTIARCH="${CMAKE_LIBRARY_ARCHITECTURE}")
endif()

# The configuration summary (optional parts on/off and why).
include(${CMAKE_CURRENT_LIST_DIR}/Summary.cmake)
