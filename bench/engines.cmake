# SPDX-License-Identifier: Apache-2.0
# The kernel's share of each sampling mechanism, no profiler code involved
# (engine_cost.c; docs/BENCHMARKS.md "Engines").
# perf-kchain reads the ring with the signal path's own reader (kring.c)
add_executable(ember_bench_engine_cost engine_cost.c ${CMAKE_SOURCE_DIR}/src/sample/kring.c)
target_include_directories(ember_bench_engine_cost PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_options(ember_bench_engine_cost PRIVATE -O2)
# instructions per kernel-frames read in the handler (kring_insns.sh)
add_executable(ember_bench_kring_insns kring_insns.c ${CMAKE_SOURCE_DIR}/src/sample/kring.c)
target_include_directories(ember_bench_kring_insns PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_options(ember_bench_kring_insns PRIVATE -O2)
