# The reverse proxy's upstream response-head parser (gw/proxy/response.c, libc only).
add_executable(unit_proxy_resp_test ${CMAKE_SOURCE_DIR}/tests/unit/proxy_resp_test.c
                                    ${CMAKE_SOURCE_DIR}/gw/proxy/response.c)
target_include_directories(unit_proxy_resp_test PRIVATE ${CMAKE_SOURCE_DIR}/gw)
target_link_libraries(unit_proxy_resp_test PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit_proxy_resp COMMAND unit_proxy_resp_test)
