# unit_tls_sesscache: the shared TLS session cache (gw/tls/sesscache.c, included by the
# test): LRU, expiry, a full cache, oversized sessions, sharing across fork(), the zone
# registry, a dead lock holder.
tlsgate_unit_test(tls_sesscache)
target_link_libraries(unit_tls_sesscache_test PRIVATE Threads::Threads)
set_tests_properties(unit_tls_sesscache PROPERTIES TIMEOUT 30)
