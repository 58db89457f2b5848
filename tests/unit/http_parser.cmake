# gw/http/parser.c: the HTTP/1.1 request parser. Built straight from its source (not the gw
# library).
tlsgate_unit_test(http_parser ${CMAKE_SOURCE_DIR}/gw/http/parser.c)
