# SPDX-License-Identifier: Apache-2.0
# The application's throughput while its Pyroscope server hangs vs. while
# it is healthy (bench/pyroscope_hang.c; uses the tests' fake server).
# Included from bench/CMakeLists.txt with: include(pyroscope.cmake)
find_program(EMBER_BENCH_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT EMBER_BENCH_PYTHON3)
  find_program(EMBER_BENCH_PYTHON3 NAMES python3)
endif()
add_executable(ember_bench_pyroscope_hang ${CMAKE_CURRENT_LIST_DIR}/pyroscope_hang.c)
target_compile_options(ember_bench_pyroscope_hang PRIVATE -O2 -fno-omit-frame-pointer)
target_link_libraries(ember_bench_pyroscope_hang PRIVATE emberprof_tools PkgConfig::LIBCURL)
target_compile_definitions(ember_bench_pyroscope_hang PRIVATE
  EMBER_PYTHON3="${EMBER_BENCH_PYTHON3}"
  EMBER_FAKE_SERVER="${CMAKE_SOURCE_DIR}/tests/pyroscope/fake_pyroscope.py")
