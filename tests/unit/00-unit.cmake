# tlsgate_unit_test(NAME SOURCES...): the cmocka unit test tests/unit/NAME_test.c, built as
# unit_NAME_test from its own file and SOURCES (the gateway sources it tests, not the gw
# library, unless it links it), include path gw/ and tests/unit/ (unit_helpers.h), and
# registered as the CTest test unit_NAME. NAME mirrors the source tested: gw/DIR/FILE.c ->
# DIR_FILE (CONTRIBUTING.md keeps the table). The caller adds libraries and properties.
function(tlsgate_unit_test name)
  add_executable(unit_${name}_test ${CMAKE_SOURCE_DIR}/tests/unit/${name}_test.c ${ARGN})
  target_include_directories(unit_${name}_test PRIVATE ${CMAKE_SOURCE_DIR}/gw
                                                       ${CMAKE_SOURCE_DIR}/tests/unit)
  target_link_libraries(unit_${name}_test PRIVATE PkgConfig::CMOCKA)
  add_test(NAME unit_${name} COMMAND unit_${name}_test)
endfunction()
