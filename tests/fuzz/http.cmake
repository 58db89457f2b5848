# HTTP/1.1 request parser: request heads, chunked bodies, paths, ranges.
tlsgate_fuzz_target(http_request ${CMAKE_SOURCE_DIR}/gw/http/parser.c)
