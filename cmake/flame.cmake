# `emberprof flame` and `emberprof diff` (src/flame/): a static library
# linked only into the CLI (the preloaded library needs none of it), with
# the page src/flame/flame.html compiled in as bytes.
set(EMBER_FLAME_PAGE_C ${CMAKE_BINARY_DIR}/generated/flame_page_data.c)
add_custom_command(OUTPUT ${EMBER_FLAME_PAGE_C}
  COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_SOURCE_DIR}/src/flame/flame.html
          -DOUT=${EMBER_FLAME_PAGE_C} -DNAME=ember__flame_page -P ${CMAKE_SOURCE_DIR}/cmake/embed.cmake
  DEPENDS ${CMAKE_SOURCE_DIR}/src/flame/flame.html ${CMAKE_SOURCE_DIR}/cmake/embed.cmake
  COMMENT "Embedding the flame graph page")
file(GLOB EMBER_FLAME_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/flame/*.c)
add_library(ember_flame STATIC ${EMBER_FLAME_SRC} ${EMBER_FLAME_PAGE_C})
target_link_libraries(ember_flame PUBLIC emberprof_internal m)
if(TARGET emberprof_cli)
  target_link_libraries(emberprof_cli PRIVATE ember_flame)
endif()
