# SPDX-License-Identifier: Apache-2.0
# bench/startcost.sh: what emberprof costs short-lived processes
# and big programs' start-up. The runner links nothing but libc.
add_executable(ember_bench_cpurun cpurun.c)
target_compile_options(ember_bench_cpurun PRIVATE -O2)
target_compile_definitions(ember_bench_cpurun PRIVATE _GNU_SOURCE)

# A preloaded library that does nothing: the loop case's floor.
add_library(ember_bench_empty_preload SHARED empty_preload.c)
# The same with one idle thread in the shell: the floor of an in-process
# agent that has a thread there.
add_library(ember_bench_thread_preload SHARED thread_preload.c)
target_link_libraries(ember_bench_thread_preload PRIVATE Threads::Threads)
# The tree sampled from outside (perf events inherited, stacks copied),
# counting records only: the floor of an out-of-process engine.
add_executable(ember_bench_perf_tree_floor perf_tree_floor.c)

# Sorting a big module's symbol index: glibc's qsort against ember__sort.
add_executable(ember_bench_sort_faults sort_faults.c)
target_link_libraries(ember_bench_sort_faults PRIVATE emberprof_tools)
