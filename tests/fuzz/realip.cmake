# X-Forwarded-For for set_real_ip_from (gw/net/realip.c; the CIDR matcher of gw/conf).
tlsgate_fuzz_target(realip ${CMAKE_SOURCE_DIR}/gw/net/realip.c
                    ${CMAKE_SOURCE_DIR}/gw/conf/lexer.c ${CMAKE_SOURCE_DIR}/gw/conf/conf.c
                    ${CMAKE_SOURCE_DIR}/gw/conf/directives.c ${CMAKE_SOURCE_DIR}/gw/conf/include.c
                    ${CMAKE_SOURCE_DIR}/gw/conf/deploy.c)
