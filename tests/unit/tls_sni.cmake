# gw/tls/sni.c (libc only): the server_name extension parser (tests/unit/tls_sni_test.c).
tlsgate_unit_test(tls_sni ${CMAKE_SOURCE_DIR}/gw/tls/sni.c)
