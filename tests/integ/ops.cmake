# Operations (issue #12): OCSP stapling from files, `tlsgate -V`, the Debian package and
# the man pages. Registered with integ.cmake's tlsgate_integ_test.
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
# ocsp_resp: test_stapling's maker of OCSP responses with chosen times (expired, future)
add_executable(ocsp_resp ${CMAKE_SOURCE_DIR}/tests/integ/ocsp_resp.c)
target_link_libraries(ocsp_resp PRIVATE OpenSSL::Crypto)
foreach(_integ stapling version sdnotify)
  tlsgate_integ_test(${_integ} ENV OCSP_RESP=$<TARGET_FILE:ocsp_resp>)
endforeach()

# bench_soak_smoke: bench/soak.sh for 8 s (reloads every 2 s, 4 connections per wrk):
# the script runs, the server survives the mixed load and the reloads, no [alert]/[crit]/
# [emerg] line. The real soak (10 minutes) is run by hand.
add_test(NAME bench_soak_smoke COMMAND bash ${CMAKE_SOURCE_DIR}/bench/soak.sh)
set_tests_properties(bench_soak_smoke PROPERTIES
                     TIMEOUT 120
                     LABELS bench
                     RUN_SERIAL TRUE # a load generator: never beside timing-sensitive tests
                     ENVIRONMENT "TLSGATE_BIN=$<TARGET_FILE:tlsgate>;SOAK_SECONDS=8;SOAK_RELOAD=2;SOAK_CONNS=4")
