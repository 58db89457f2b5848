# unit_sesscache: the shared TLS session cache (gw/tls/sesscache.c): LRU, expiry, a full
# cache, oversized sessions, sharing across fork(), the zone registry, a dead lock holder.
add_executable(unit_sesscache_test ${CMAKE_SOURCE_DIR}/tests/unit/sesscache_test.c)
target_include_directories(unit_sesscache_test PRIVATE ${CMAKE_SOURCE_DIR}/gw)
target_link_libraries(unit_sesscache_test PRIVATE PkgConfig::CMOCKA Threads::Threads)
add_test(NAME unit_sesscache COMMAND unit_sesscache_test)
set_tests_properties(unit_sesscache PROPERTIES TIMEOUT 30)
