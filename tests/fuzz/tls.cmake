# TLS ClientHello path in memory (gw_conn_client_hello on a real cycle's SSL_CTXs): links
# the gateway library and OpenSSL. Seeds: tests/fuzz/gen_tls_hello_seeds.py.
tlsgate_fuzz_target(tls_hello)
target_link_libraries(fuzz_replay_tls_hello PRIVATE gw)
