# The provider's test programs (tests/prov/<src>): each loads tlsgate.so from the build
# directory (TLSGATE_PROV_DIR) and is built after it; ARGN: the libraries it links.
function(tlsgate_prov_test_program target src)
  add_executable(${target} ${CMAKE_SOURCE_DIR}/tests/prov/${src})
  target_compile_definitions(${target} PRIVATE TLSGATE_PROV_DIR="${CMAKE_BINARY_DIR}")
  target_link_libraries(${target} PRIVATE ${ARGN})
  if(TARGET tlsgate_prov)
    add_dependencies(${target} tlsgate_prov)
  endif()
endfunction()

# Test `name`: `target` under valgrind memcheck (errors and leaks fail it) on mb8's portable
# path, with the environment entries `env` (a list) added. Only when valgrind is there and
# not in sanitizer builds (valgrind and ASan do not mix; there tlsgate.so itself is built
# without sanitizers).
find_program(VALGRIND_EXECUTABLE valgrind)
function(tlsgate_prov_valgrind_test name target timeout env)
  set(envs MB8_FORCE_PORTABLE=1 ${env})
  if(VALGRIND_EXECUTABLE AND NOT TLSGATE_SANITIZE)
    add_test(NAME ${name}
             COMMAND ${VALGRIND_EXECUTABLE} --error-exitcode=1 --leak-check=full --quiet
                     $<TARGET_FILE:${target}>)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} LABELS "prov;valgrind"
                         ENVIRONMENT "${envs}"
                         REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)
  endif()
endfunction()

# prov_unit: EVP-level correctness of the tlsgate provider (${CMAKE_BINARY_DIR}/tlsgate.so,
# target tlsgate_prov, prov/README.md) against OpenSSL's default provider, in and out of
# ASYNC jobs (1, 3, 8 and 64 in flight; callback and wait-fd wake-ups; timer flush and
# application polling), bad input, counters, fork. See tests/prov/prov_test.c.
# prov_valgrind: the same binary under valgrind memcheck on mb8's portable path, with
# PROV_TEST_QUICK=1 (no RSA-4096, no 64-job runs, fewer keys).
tlsgate_prov_test_program(prov_test prov_test.c PkgConfig::CMOCKA OpenSSL::Crypto Threads::Threads)
target_sources(prov_test PRIVATE ${CMAKE_SOURCE_DIR}/prov/waitfd.c) # tg_names_contain
target_compile_definitions(prov_test PRIVATE
                           PROV_RSA_KEYS_DIR="${CMAKE_SOURCE_DIR}/tests/diff/rsa_keys")
target_include_directories(prov_test PRIVATE ${CMAKE_SOURCE_DIR}/prov/include # the metrics layout
                                             ${CMAKE_SOURCE_DIR}/prov)

# The suite checks batching itself (every operation in a job is queued): the adaptive
# choice of single operations at low load is off here (TLSGATE_ADAPTIVE=off) and tested by
# prov_interop.
add_test(NAME prov_unit COMMAND prov_test)
set_tests_properties(prov_unit PROPERTIES TIMEOUT 240 LABELS "prov"
                     ENVIRONMENT "TLSGATE_ADAPTIVE=off"
                     REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)

tlsgate_prov_valgrind_test(prov_valgrind prov_test 600 "PROV_TEST_QUICK=1;TLSGATE_ADAPTIVE=off")

# Regressions found by review: tests/prov/regress_test.c. `setpeer` is memory corruption that
# only valgrind sees (the module is never instrumented): under valgrind when it is available.
tlsgate_prov_test_program(prov_regress regress_test.c OpenSSL::Crypto)
if(VALGRIND_EXECUTABLE AND NOT TLSGATE_SANITIZE)
  add_test(NAME prov_regress_setpeer
           COMMAND ${VALGRIND_EXECUTABLE} --error-exitcode=1 --quiet $<TARGET_FILE:prov_regress> setpeer)
  set_tests_properties(prov_regress_setpeer PROPERTIES ENVIRONMENT MB8_FORCE_PORTABLE=1)
else()
  add_test(NAME prov_regress_setpeer COMMAND prov_regress setpeer)
endif()
add_test(NAME prov_regress_fork COMMAND prov_regress fork)
set_tests_properties(prov_regress_fork PROPERTIES
                     ENVIRONMENT "TLSGATE_POLL_MODE=app;TLSGATE_ADAPTIVE=off")
set_tests_properties(prov_regress_setpeer prov_regress_fork PROPERTIES
                     TIMEOUT 120 LABELS prov REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)

# prov_kdf: tlsgate's TLS13-KDF (prov/kdf.c) against the default provider's: random and
# edge inputs, the per-thread HMAC key cache, delegated digests, TLS 1.3 handshakes of a
# server that prefers tlsgate with a plain client (tests/prov/kdf_test.c). Under valgrind
# too when available (memcheck of the cache, the buffers and thread exit).
tlsgate_prov_test_program(kdf_test kdf_test.c
                          PkgConfig::CMOCKA OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
add_test(NAME prov_kdf COMMAND kdf_test)
set_tests_properties(prov_kdf PROPERTIES TIMEOUT 120 LABELS prov
                     REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)
tlsgate_prov_valgrind_test(prov_kdf_valgrind kdf_test 300 "")

# prov_gcm: tlsgate's AES-GCM (prov/cipher_gcm.c, intel-ipsec-mb) against the default
# provider's: streaming over record sizes, IV and AAD lengths, pieces, in place or not,
# tampering and misuse, the TLS 1.2 record path, TLS 1.2/1.3 handshakes with a plain
# client (tests/prov/cipher_gcm_test.c). prov_gcm_off: the same with TLSGATE_GCM=off (no
# cipher of ours: OpenSSL's is used and the handshakes still work).
tlsgate_prov_test_program(cipher_gcm_test cipher_gcm_test.c
                          PkgConfig::CMOCKA OpenSSL::SSL OpenSSL::Crypto)
add_test(NAME prov_gcm COMMAND cipher_gcm_test)
add_test(NAME prov_gcm_off COMMAND cipher_gcm_test)
set_tests_properties(prov_gcm prov_gcm_off PROPERTIES TIMEOUT 120 LABELS prov
                     REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)
set_tests_properties(prov_gcm_off PROPERTIES ENVIRONMENT "TLSGATE_GCM=off")

# prov_mlkem: the hybrid ML-KEM TLS groups at the EVP level (tests/prov/mlkem_test.c):
# libssl's calls, the draft's layouts, bad shares refused, 8 encapsulations in ASYNC jobs
# as one batch (adaptive off, so every request in a job is queued; poll mode app: no timer
# flushes a partial batch while the jobs start).
tlsgate_prov_test_program(prov_mlkem_test mlkem_test.c PkgConfig::CMOCKA OpenSSL::Crypto)
target_include_directories(prov_mlkem_test PRIVATE ${CMAKE_SOURCE_DIR}/prov/include)
add_test(NAME prov_mlkem COMMAND prov_mlkem_test)
set_tests_properties(prov_mlkem PROPERTIES TIMEOUT 120 LABELS "prov"
                     ENVIRONMENT "TLSGATE_ADAPTIVE=off;TLSGATE_POLL_MODE=app"
                     REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)
tlsgate_prov_valgrind_test(prov_mlkem_valgrind prov_mlkem_test 300
                           "TLSGATE_ADAPTIVE=off;TLSGATE_POLL_MODE=app")
