# prov_interop: the tlsgate provider (${CMAKE_BINARY_DIR}/tlsgate.so, target tlsgate_prov)
# loaded by programs we did not write: `openssl speed -async_jobs`, `openssl s_server -async`
# with `openssl s_client`, and Debian's HAProxy (ssl-provider tlsgate, ssl-mode-async).
# The provider's counters are read from TLSGATE_STATS_FILE. See tests/prov/interop.sh.
#
# A test cannot depend on a target: build the module first (`cmake --build BUILD` builds
# it with everything else, or `--target tlsgate_prov`). Without it CTest reports the test
# as "Not Run" (REQUIRED_FILES), which counts as a failure.
# Needs openssl, python3, haproxy (>= 2.6) and curl: `scripts/deps.sh test`. A missing
# program makes the script exit 77 (skipped), or fail under CI=true.
add_test(NAME prov_interop
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/prov/interop.sh ${CMAKE_BINARY_DIR})
set_tests_properties(prov_interop PROPERTIES
                     TIMEOUT 300
                     LABELS "prov;interop"
                     SKIP_RETURN_CODE 77
                     REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)

# prov_hybrid_interop: X25519MLKEM768 / SecP256r1MLKEM768 between openssl s_server and
# s_client with the provider, fallback to X25519 with either side without it, and headless
# Chromium (skipped, exit 77, without a chromium binary). tests/prov/hybrid_interop.sh.
add_test(NAME prov_hybrid_interop
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/prov/hybrid_interop.sh ${CMAKE_BINARY_DIR})
set_tests_properties(prov_hybrid_interop PROPERTIES TIMEOUT 180 LABELS "prov;interop"
                     SKIP_RETURN_CODE 77 REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)
