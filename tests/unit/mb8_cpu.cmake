add_executable(unit_mb8_cpu_test ${CMAKE_SOURCE_DIR}/tests/unit/mb8_cpu_test.c)
target_link_libraries(unit_mb8_cpu_test PRIVATE mb8 PkgConfig::CMOCKA)
add_test(NAME unit_mb8_cpu COMMAND unit_mb8_cpu_test)
