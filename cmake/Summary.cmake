# SPDX-License-Identifier: Apache-2.0
# Summary.cmake - what this configuration builds, and which optional parts
# are on or off and why (printed at the end of `cmake -S . -B build`).
# Optional parts and what they need:
#   libcurl   headers at build time (libcurl4-openssl-dev); the library is
#             dlopen'ed at run time by network reporters (libcurl4)
#   libzip    headers at build time (libzip-dev); dlopen'ed by the S3
#             reporter at run time (libzip4)
#   jansson   linked, for the S3 reporter's AWS answers (libjansson-dev)
#   libuv, libevent  only for the tests of the header-only helpers
#             emberprof_uv.h / emberprof_event.h (libuv1-dev, libevent-dev)
#   jemalloc  only at run time, in the profiled program, for the jemalloc
#             allocation backend (libjemalloc2); its tests need it here
pkg_check_modules(EMBER_SUM_UV QUIET libuv)
pkg_check_modules(EMBER_SUM_EVENT QUIET libevent)
find_library(EMBER_SUM_JEMALLOC NAMES libjemalloc.so.2 jemalloc)

function(ember_summary_line what on detail)
  if(${on})
    set(state "on ")
  else()
    set(state "off")
  endif()
  string(LENGTH "${what}" n)
  math(EXPR pad "36 - ${n}")
  if(pad LESS 1)
    set(pad 1)
  endif()
  string(REPEAT " " ${pad} sp)
  message(STATUS "  ${what}${sp}${state}  ${detail}")
endfunction()

message(STATUS "")
message(STATUS "emberprof ${PROJECT_VERSION} configuration:")
message(STATUS "  build type                          ${CMAKE_BUILD_TYPE}, ${CMAKE_C_COMPILER_ID} ${CMAKE_C_COMPILER_VERSION}")
message(STATUS "  install prefix                      ${CMAKE_INSTALL_PREFIX} (libdir ${CMAKE_INSTALL_LIBDIR})")
ember_summary_line("warnings are errors (EMBER_WERROR)" EMBER_WERROR "")
ember_summary_line("sanitizers (EMBER_SANITIZE)" EMBER_SANITIZE "")
# include(CTest) comes after this file and defaults BUILD_TESTING to ON.
if(NOT DEFINED BUILD_TESTING OR BUILD_TESTING)
  set(ember_sum_tests ON)
else()
  set(ember_sum_tests OFF)
endif()
ember_summary_line("tests (BUILD_TESTING)" ember_sum_tests "")
ember_summary_line("Pyroscope reporter (libcurl)" LIBCURL_FOUND
  "libcurl ${LIBCURL_VERSION} headers; libcurl4 is loaded when used")
if(EMBER_HAVE_S3)
  ember_summary_line("S3 reporter (EMBER_S3=${EMBER_S3})" EMBER_HAVE_S3
    "jansson ${JANSSON_VERSION}, libzip ${LIBZIP_VERSION} headers; libzip4 is loaded when used")
elseif(EMBER_S3 STREQUAL "OFF")
  ember_summary_line("S3 reporter (EMBER_S3=OFF)" EMBER_HAVE_S3 "left out on request")
else()
  ember_summary_line("S3 reporter (EMBER_S3=${EMBER_S3})" EMBER_HAVE_S3
    "install libjansson-dev and libzip-dev to build it")
endif()
if(EMBER_SUM_UV_FOUND AND EMBER_SUM_EVENT_FOUND)
  ember_summary_line("libuv/libevent helper tests" ON "libuv ${EMBER_SUM_UV_VERSION}, libevent ${EMBER_SUM_EVENT_VERSION}")
else()
  ember_summary_line("libuv/libevent helper tests" OFF
    "install libuv1-dev and libevent-dev to test emberprof_uv.h/emberprof_event.h")
endif()
if(EMBER_SUM_JEMALLOC)
  ember_summary_line("jemalloc backend tests" ON "${EMBER_SUM_JEMALLOC}")
else()
  ember_summary_line("jemalloc backend tests" OFF "install libjemalloc2 (libjemalloc-dev) to run them")
endif()
message(STATUS "")
