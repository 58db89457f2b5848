# PROXY protocol parser and v1 writer (gw/net/proxy_protocol.c, libc only).
add_executable(unit_proxy_protocol ${CMAKE_SOURCE_DIR}/tests/unit/pp_test.c
               ${CMAKE_SOURCE_DIR}/gw/net/proxy_protocol.c)
target_include_directories(unit_proxy_protocol PRIVATE ${CMAKE_SOURCE_DIR}/gw)
target_link_libraries(unit_proxy_protocol PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit_proxy_protocol COMMAND unit_proxy_protocol)
