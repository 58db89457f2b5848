add_executable(unit_loop_test ${CMAKE_SOURCE_DIR}/tests/unit/loop_test.c
               ${CMAKE_SOURCE_DIR}/gw/net/loop.c ${CMAKE_SOURCE_DIR}/gw/core/clock.c)
target_include_directories(unit_loop_test PRIVATE ${CMAKE_SOURCE_DIR}/gw)
target_link_libraries(unit_loop_test PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit_loop COMMAND unit_loop_test)
