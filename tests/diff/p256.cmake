# mb8 P-256 (mb8/include/mb8/p256.h) against OpenSSL and RFC 5903 / RFC 6979 vectors.
# Environment: P256_DIFF_SEED=<n> repeats a random run; P256_DIFF_QUICK=1 runs few
# iterations (for valgrind: MB8_FORCE_PORTABLE=1 P256_DIFF_QUICK=1 valgrind ...).
add_executable(p256_diff_test ${CMAKE_SOURCE_DIR}/tests/diff/p256_diff_test.c)
target_link_libraries(p256_diff_test PRIVATE mb8 OpenSSL::Crypto PkgConfig::CMOCKA)
# the kernels' internal header, for the IFMA-vs-reference comparison
target_include_directories(p256_diff_test PRIVATE ${CMAKE_SOURCE_DIR}/mb8/src/p256)
# diff_p256 runs the kernel this CPU selects (IFMA when available, and then also compares
# it with the reference); diff_p256_portable the same tests on the portable reference.
add_test(NAME diff_p256 COMMAND p256_diff_test)
set_tests_properties(diff_p256 PROPERTIES TIMEOUT 120)
add_test(NAME diff_p256_portable COMMAND p256_diff_test)
set_tests_properties(diff_p256_portable PROPERTIES TIMEOUT 120 ENVIRONMENT "MB8_FORCE_PORTABLE=1")
