# The reverse proxy's upstream response-head parser (gw/proxy/response.c, libc only).
tlsgate_unit_test(proxy_response ${CMAKE_SOURCE_DIR}/gw/proxy/response.c)
