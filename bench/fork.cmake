# The cost of a fork in a profiled process (issue 15): bench/fork.sh.
add_executable(ember_bench_fork_cost fork_cost.c)
target_compile_options(ember_bench_fork_cost PRIVATE -O2)
add_executable(ember_bench_static_true static_true.c)
target_link_options(ember_bench_static_true PRIVATE -static)
