# Upstream response heads (gw/proxy/response.c, libc only).
tlsgate_fuzz_target(http_response ${CMAKE_SOURCE_DIR}/gw/proxy/response.c)
