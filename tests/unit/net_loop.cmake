# gw/net/loop.c: the worker's timer heap against a brute-force model (tests/unit/net_loop_test.c).
tlsgate_unit_test(net_loop ${CMAKE_SOURCE_DIR}/gw/net/loop.c ${CMAKE_SOURCE_DIR}/gw/core/clock.c)
