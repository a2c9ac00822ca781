# SPDX-License-Identifier: Apache-2.0
# The kernel's share of each sampling mechanism, no profiler code involved
# (engine_cost.c; docs/BENCHMARKS.md "Engines").
add_executable(ember_bench_engine_cost engine_cost.c)
target_compile_options(ember_bench_engine_cost PRIVATE -O2)
