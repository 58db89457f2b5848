# mb8 P-256 (mb8/include/mb8/p256.h) against OpenSSL and RFC 5903 / RFC 6979 vectors.
# Environment: P256_DIFF_SEED=<n> repeats a random run; P256_DIFF_QUICK=1 runs few
# iterations (for valgrind: MB8_FORCE_PORTABLE=1 P256_DIFF_QUICK=1 valgrind ...).
add_executable(p256_diff_test ${CMAKE_SOURCE_DIR}/tests/diff/p256_diff_test.c)
target_link_libraries(p256_diff_test PRIVATE mb8 OpenSSL::Crypto PkgConfig::CMOCKA)
add_test(NAME diff_p256 COMMAND p256_diff_test)
set_tests_properties(diff_p256 PROPERTIES TIMEOUT 120)
