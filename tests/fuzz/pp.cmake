# PROXY protocol header parser (gw/net/proxy_protocol.c, libc only).
tlsgate_fuzz_target(proxy_protocol ${CMAKE_SOURCE_DIR}/gw/net/proxy_protocol.c)
