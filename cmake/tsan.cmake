# SPDX-License-Identifier: Apache-2.0
# ThreadSanitizer build (EMBER_TSAN=ON; `make test-tsan`, scripts/test-tsan.sh).
# Everything is instrumented, the agent is linked into the test programs
# (emberprof_internal) and only the tests that run the agent's own threads
# concurrently are run (their list and the reasons for what is left out are
# in scripts/test-tsan.sh). ASan and TSan cannot share a process.
if(EMBER_TSAN)
  if(EMBER_SANITIZE)
    message(FATAL_ERROR "EMBER_TSAN and EMBER_SANITIZE cannot be combined: use two build trees")
  endif()
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
  # GCC warns that TSan does not model atomic_thread_fence. Every access
  # the fences in src/ order is itself atomic (seqlock-style reads of the
  # thread table and the wall-sample records), so TSan reports no race on
  # them either way; what the fences add is ordering TSan cannot check.
  add_compile_options($<$<C_COMPILER_ID:GNU>:-Wno-tsan>)
endif()
