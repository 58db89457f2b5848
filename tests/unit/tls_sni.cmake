# gw/tls/sni.c (libc only): the server_name extension parser (tests/unit/tls_sni_test.c).
add_executable(unit_tls_sni_test ${CMAKE_SOURCE_DIR}/tests/unit/tls_sni_test.c
                                 ${CMAKE_SOURCE_DIR}/gw/tls/sni.c)
target_include_directories(unit_tls_sni_test PRIVATE ${CMAKE_SOURCE_DIR}/gw)
target_link_libraries(unit_tls_sni_test PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit_tls_sni COMMAND unit_tls_sni_test)
