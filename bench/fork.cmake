# SPDX-License-Identifier: Apache-2.0
# The cost of a fork in a profiled process: bench/fork.sh.
add_executable(ember_bench_fork_cost fork_cost.c)
target_link_libraries(ember_bench_fork_cost PRIVATE Threads::Threads)
target_compile_options(ember_bench_fork_cost PRIVATE -O2)
add_executable(ember_bench_static_true static_true.c)
# never sanitized (a static program cannot be), whatever the build
set_property(TARGET ember_bench_static_true PROPERTY COMPILE_OPTIONS "")
set_property(TARGET ember_bench_static_true PROPERTY LINK_OPTIONS -static)
