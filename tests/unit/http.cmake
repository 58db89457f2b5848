# HTTP/1.1 request parser. Built straight from its source (not the gw library) so that it
# can be tested while other parts of the tree are still in progress.
add_executable(unit_http_parser_test ${CMAKE_SOURCE_DIR}/tests/unit/http_parser_test.c
                                     ${CMAKE_SOURCE_DIR}/gw/http/parser.c)
target_include_directories(unit_http_parser_test PRIVATE ${CMAKE_SOURCE_DIR}/gw)
target_link_libraries(unit_http_parser_test PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit_http_parser COMMAND unit_http_parser_test)
