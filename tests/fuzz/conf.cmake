# Configuration reader: tests/fuzz/conf_parse.c over gw/conf (libc only).
tlsgate_fuzz_target(conf_parse ${CMAKE_SOURCE_DIR}/gw/conf/lexer.c
                    ${CMAKE_SOURCE_DIR}/gw/conf/conf.c ${CMAKE_SOURCE_DIR}/gw/conf/directives.c
                    ${CMAKE_SOURCE_DIR}/gw/conf/include.c ${CMAKE_SOURCE_DIR}/gw/conf/deploy.c)
