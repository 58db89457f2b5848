tlsgate_fuzz_target(sni_ext ${CMAKE_SOURCE_DIR}/gw/tls/sni.c)
