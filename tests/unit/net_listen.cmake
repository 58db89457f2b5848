# gw/net/listen.c: listening sockets and address text (tests/unit/net_listen_test.c, on
# 127.0.0.1 with ports the kernel picks).
tlsgate_unit_test(net_listen ${CMAKE_SOURCE_DIR}/gw/net/listen.c)
