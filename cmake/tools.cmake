# SPDX-License-Identifier: Apache-2.0
# The tools library (tools/): code that runs only in the `emberprof`
# command, the tests, the fuzzers and the benchmarks, never inside a
# profiled program: the readers (tools/read), top, the long-poll decoders,
# flame and diff (with the page tools/flame/flame.html compiled in as
# bytes) and the tree engine. A static library on top of the in-process
# one (emberprof_internal); its include root tools/ is given to nothing
# under src/, so the preloaded library cannot reach it.
set(EMBER_FLAME_PAGE_C ${CMAKE_BINARY_DIR}/generated/flame_page_data.c)
add_custom_command(OUTPUT ${EMBER_FLAME_PAGE_C}
  COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_SOURCE_DIR}/tools/flame/flame.html
          -DOUT=${EMBER_FLAME_PAGE_C} -DNAME=ember__flame_page -P ${CMAKE_SOURCE_DIR}/cmake/embed.cmake
  DEPENDS ${CMAKE_SOURCE_DIR}/tools/flame/flame.html ${CMAKE_SOURCE_DIR}/cmake/embed.cmake
  COMMENT "Embedding the flame graph page")
file(GLOB EMBER_TOOLS_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tools/*/*.c)
add_library(emberprof_tools STATIC ${EMBER_TOOLS_SRC} ${EMBER_FLAME_PAGE_C})
target_include_directories(emberprof_tools PUBLIC ${CMAKE_SOURCE_DIR}/tools)
target_include_directories(emberprof_tools PRIVATE ${IBERTY_INCLUDE} ${LIBDW_INCLUDE_DIRS}
  ${ZLIB_INCLUDE_DIRS})
target_link_libraries(emberprof_tools PUBLIC emberprof_internal m)
