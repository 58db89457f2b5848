# PROXY protocol parser and v1 writer (gw/net/proxy_protocol.c, libc only).
tlsgate_unit_test(net_proxy_protocol ${CMAKE_SOURCE_DIR}/gw/net/proxy_protocol.c)
