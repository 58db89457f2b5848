# prov_unit: EVP-level correctness of the tlsgate provider (${CMAKE_BINARY_DIR}/tlsgate.so,
# target tlsgate_prov, prov/README.md) against OpenSSL's default provider, in and out of
# ASYNC jobs (1, 3, 8 and 64 in flight; callback and wait-fd wake-ups; timer flush and
# application polling), bad input, counters, fork. See tests/prov/prov_test.c.
# prov_valgrind: the same binary under valgrind memcheck on mb8's portable path, with
# PROV_TEST_QUICK=1 (no RSA-4096, no 64-job runs, fewer keys). Not in sanitizer builds
# (valgrind and ASan do not mix); there tlsgate.so itself is built without sanitizers.
add_executable(prov_test ${CMAKE_SOURCE_DIR}/tests/prov/prov_test.c
                         ${CMAKE_SOURCE_DIR}/prov/waitfd.c) # tg_names_contain
target_compile_definitions(prov_test PRIVATE
                           TLSGATE_PROV_DIR="${CMAKE_BINARY_DIR}"
                           PROV_RSA_KEYS_DIR="${CMAKE_SOURCE_DIR}/tests/diff/rsa_keys")
target_link_libraries(prov_test PRIVATE PkgConfig::CMOCKA OpenSSL::Crypto Threads::Threads)
target_include_directories(prov_test PRIVATE ${CMAKE_SOURCE_DIR}/prov/include # the metrics layout
                                             ${CMAKE_SOURCE_DIR}/prov)
if(TARGET tlsgate_prov)
  add_dependencies(prov_test tlsgate_prov)
endif()

# The suite checks batching itself (every operation in a job is queued): the adaptive
# choice of single operations at low load is off here (TLSGATE_ADAPTIVE=off) and tested by
# prov_interop.
add_test(NAME prov_unit COMMAND prov_test)
set_tests_properties(prov_unit PROPERTIES TIMEOUT 240 LABELS "prov"
                     ENVIRONMENT "TLSGATE_ADAPTIVE=off"
                     REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)

find_program(VALGRIND_EXECUTABLE valgrind)
if(VALGRIND_EXECUTABLE AND NOT TLSGATE_SANITIZE)
  add_test(NAME prov_valgrind
           COMMAND ${VALGRIND_EXECUTABLE} --error-exitcode=1 --leak-check=full --quiet
                   $<TARGET_FILE:prov_test>)
  set_tests_properties(prov_valgrind PROPERTIES
                       TIMEOUT 600 LABELS "prov;valgrind"
                       ENVIRONMENT "MB8_FORCE_PORTABLE=1;PROV_TEST_QUICK=1;TLSGATE_ADAPTIVE=off"
                       REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)
endif()

# Regressions found by review: tests/prov/regress_test.c. `setpeer` is memory corruption that
# only valgrind sees (the module is never instrumented): under valgrind when it is available.
add_executable(prov_regress ${CMAKE_SOURCE_DIR}/tests/prov/regress_test.c)
target_compile_definitions(prov_regress PRIVATE TLSGATE_PROV_DIR="${CMAKE_BINARY_DIR}")
target_link_libraries(prov_regress PRIVATE OpenSSL::Crypto)
if(TARGET tlsgate_prov)
  add_dependencies(prov_regress tlsgate_prov)
endif()
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
add_executable(kdf_test ${CMAKE_SOURCE_DIR}/tests/prov/kdf_test.c)
target_compile_definitions(kdf_test PRIVATE TLSGATE_PROV_DIR="${CMAKE_BINARY_DIR}")
target_link_libraries(kdf_test PRIVATE PkgConfig::CMOCKA OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
if(TARGET tlsgate_prov)
  add_dependencies(kdf_test tlsgate_prov)
endif()
add_test(NAME prov_kdf COMMAND kdf_test)
set_tests_properties(prov_kdf PROPERTIES TIMEOUT 120 LABELS prov
                     REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)
if(VALGRIND_EXECUTABLE AND NOT TLSGATE_SANITIZE)
  add_test(NAME prov_kdf_valgrind
           COMMAND ${VALGRIND_EXECUTABLE} --error-exitcode=1 --leak-check=full --quiet
                   $<TARGET_FILE:kdf_test>)
  set_tests_properties(prov_kdf_valgrind PROPERTIES TIMEOUT 300 LABELS "prov;valgrind"
                       ENVIRONMENT "MB8_FORCE_PORTABLE=1"
                       REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)
endif()

# prov_gcm: tlsgate's AES-GCM (prov/cipher_gcm.c, intel-ipsec-mb) against the default
# provider's: streaming over record sizes, IV and AAD lengths, pieces, in place or not,
# tampering and misuse, the TLS 1.2 record path, TLS 1.2/1.3 handshakes with a plain
# client (tests/prov/cipher_gcm_test.c). prov_gcm_off: the same with TLSGATE_GCM=off (no
# cipher of ours: OpenSSL's is used and the handshakes still work).
add_executable(cipher_gcm_test ${CMAKE_SOURCE_DIR}/tests/prov/cipher_gcm_test.c)
target_compile_definitions(cipher_gcm_test PRIVATE TLSGATE_PROV_DIR="${CMAKE_BINARY_DIR}")
target_link_libraries(cipher_gcm_test PRIVATE PkgConfig::CMOCKA OpenSSL::SSL OpenSSL::Crypto)
if(TARGET tlsgate_prov)
  add_dependencies(cipher_gcm_test tlsgate_prov)
endif()
add_test(NAME prov_gcm COMMAND cipher_gcm_test)
add_test(NAME prov_gcm_off COMMAND cipher_gcm_test)
set_tests_properties(prov_gcm prov_gcm_off PROPERTIES TIMEOUT 120 LABELS prov
                     REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)
set_tests_properties(prov_gcm_off PROPERTIES ENVIRONMENT "TLSGATE_GCM=off")

# prov_mlkem: the hybrid ML-KEM TLS groups at the EVP level (tests/prov/mlkem_test.c):
# libssl's calls, the draft's layouts, bad shares refused, 8 encapsulations in ASYNC jobs
# as one batch (adaptive off, so every request in a job is queued; poll mode app: no timer
# flushes a partial batch while the jobs start).
add_executable(prov_mlkem_test ${CMAKE_SOURCE_DIR}/tests/prov/mlkem_test.c)
target_compile_definitions(prov_mlkem_test PRIVATE TLSGATE_PROV_DIR="${CMAKE_BINARY_DIR}")
target_link_libraries(prov_mlkem_test PRIVATE PkgConfig::CMOCKA OpenSSL::Crypto)
target_include_directories(prov_mlkem_test PRIVATE ${CMAKE_SOURCE_DIR}/prov/include)
if(TARGET tlsgate_prov)
  add_dependencies(prov_mlkem_test tlsgate_prov)
endif()
add_test(NAME prov_mlkem COMMAND prov_mlkem_test)
set_tests_properties(prov_mlkem PROPERTIES TIMEOUT 120 LABELS "prov"
                     ENVIRONMENT "TLSGATE_ADAPTIVE=off;TLSGATE_POLL_MODE=app"
                     REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)
if(VALGRIND_EXECUTABLE AND NOT TLSGATE_SANITIZE)
  add_test(NAME prov_mlkem_valgrind
           COMMAND ${VALGRIND_EXECUTABLE} --error-exitcode=1 --leak-check=full --quiet
                   $<TARGET_FILE:prov_mlkem_test>)
  set_tests_properties(prov_mlkem_valgrind PROPERTIES TIMEOUT 300 LABELS "prov;valgrind"
                       ENVIRONMENT "MB8_FORCE_PORTABLE=1;TLSGATE_ADAPTIVE=off;TLSGATE_POLL_MODE=app"
                       REQUIRED_FILES ${CMAKE_BINARY_DIR}/tlsgate.so)
endif()
