# SPDX-License-Identifier: Apache-2.0
# Read by ctest before it runs any test (the TEST_INCLUDE_FILES property of
# the tests directory): every test runs with the unwind-table cache off, so
# that none depends on a cache left warm or cold by an earlier run, and none
# writes into the real home directory. The cache's own tests
# (tests/table_cache/) set EMBERPROF_UNWIND_CACHE to a directory of their own.
set(ENV{EMBERPROF_UNWIND_CACHE} "off")
