# gw/net/listen.c: listening sockets and address text (tests/unit/net_listen_test.c, on
# 127.0.0.1 with ports the kernel picks).
add_executable(unit_net_listen_test ${CMAKE_SOURCE_DIR}/tests/unit/net_listen_test.c
                                    ${CMAKE_SOURCE_DIR}/gw/net/listen.c)
target_include_directories(unit_net_listen_test PRIVATE ${CMAKE_SOURCE_DIR}/gw)
target_link_libraries(unit_net_listen_test PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit_net_listen COMMAND unit_net_listen_test)
