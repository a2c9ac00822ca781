# SPDX-License-Identifier: Apache-2.0
# Cost of ember_poll_begin/ember_poll_end around a callback (poll_cost.c;
# docs/BENCHMARKS.md section 7).
add_executable(ember_bench_poll_cost ${CMAKE_CURRENT_SOURCE_DIR}/poll_cost.c)
target_compile_options(ember_bench_poll_cost PRIVATE -O2)
target_link_libraries(ember_bench_poll_cost PRIVATE emberprof)
target_include_directories(ember_bench_poll_cost PRIVATE ${CMAKE_SOURCE_DIR}/include)
