# SPDX-License-Identifier: Apache-2.0
# The DWARF unwinder's benchmark: cost per unwind at depths 8, 32
# and 128, frame pointers against DWARF tables, and table build time and
# memory. Included from bench/CMakeLists.txt:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/unwind.cmake)
# The recursion keeps frame pointers so that both walkers see every frame.
add_executable(ember_bench_unwind_cost ${CMAKE_CURRENT_LIST_DIR}/unwind_cost.c)
target_compile_options(ember_bench_unwind_cost PRIVATE -O2 -fno-omit-frame-pointer)
target_link_libraries(ember_bench_unwind_cost PRIVATE emberprof_tools ${CMAKE_DL_LIBS})

# Table size and build time of the modules named (docs/BENCHMARKS.md,
# "Unwind table size").
add_executable(ember_bench_cfi_size ${CMAKE_CURRENT_LIST_DIR}/cfi_size.c)
target_link_libraries(ember_bench_cfi_size PRIVATE emberprof_tools ${CMAKE_DL_LIBS})

# Instructions per unwind at depth 32, for comparing architectures
# (bench/unwind_insns.sh).
add_executable(ember_bench_unwind_insns ${CMAKE_CURRENT_LIST_DIR}/unwind_insns.c)
target_compile_options(ember_bench_unwind_insns PRIVATE -O2 -fno-omit-frame-pointer)
target_link_libraries(ember_bench_unwind_insns PRIVATE emberprof_tools ${CMAKE_DL_LIBS})

# Sampling without a signal (perf_events copying registers and the user
# stack into a ring buffer) against the signal path.
add_executable(ember_bench_nosignal_cost ${CMAKE_CURRENT_LIST_DIR}/nosignal_cost.c)
target_compile_options(ember_bench_nosignal_cost PRIVATE -O2 -fno-omit-frame-pointer)
target_link_libraries(ember_bench_nosignal_cost PRIVATE emberprof_tools Threads::Threads)
