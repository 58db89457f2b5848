# The reverse proxy's upstream response-head parser (gw/proxy/proxy.c), linked from the
# gw library.
add_executable(unit_proxy_resp_test ${CMAKE_SOURCE_DIR}/tests/unit/proxy_resp_test.c)
target_link_libraries(unit_proxy_resp_test PRIVATE gw PkgConfig::CMOCKA)
add_test(NAME unit_proxy_resp COMMAND unit_proxy_resp_test)
