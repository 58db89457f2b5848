add_executable(unit_limits_test ${CMAKE_SOURCE_DIR}/tests/unit/limits_test.c
               ${CMAKE_SOURCE_DIR}/gw/net/limits.c)
target_include_directories(unit_limits_test PRIVATE ${CMAKE_SOURCE_DIR}/gw)
target_link_libraries(unit_limits_test PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit_limits COMMAND unit_limits_test)
