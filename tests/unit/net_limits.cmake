# gw/net/limits.c: limit_conn_per_ip counting (tests/unit/net_limits_test.c).
tlsgate_unit_test(net_limits ${CMAKE_SOURCE_DIR}/gw/net/limits.c)
