add_test(NAME layering COMMAND ${CMAKE_SOURCE_DIR}/tests/layering.sh)
