# mb8 P-384 (mb8/include/mb8/p384.h) against OpenSSL and RFC 5903 / RFC 6979 vectors.
# Environment: P384_DIFF_SEED=<n> repeats a random run; P384_DIFF_QUICK=1 runs few
# iterations (for valgrind: MB8_FORCE_PORTABLE=1 P384_DIFF_QUICK=1 valgrind ...).
add_executable(p384_diff_test ${CMAKE_SOURCE_DIR}/tests/diff/p384_diff_test.c)
target_link_libraries(p384_diff_test PRIVATE mb8 OpenSSL::Crypto PkgConfig::CMOCKA)
# the kernels' internal header, for the IFMA-vs-reference comparison
target_include_directories(p384_diff_test PRIVATE ${CMAKE_SOURCE_DIR}/mb8/src/p384)
# diff_p384 runs the kernel this CPU selects (IFMA when available, and then also compares
# it with the reference); diff_p384_portable the same tests on the portable reference.
add_test(NAME diff_p384 COMMAND p384_diff_test)
set_tests_properties(diff_p384 PROPERTIES TIMEOUT 120)
add_test(NAME diff_p384_portable COMMAND p384_diff_test)
set_tests_properties(diff_p384_portable PROPERTIES TIMEOUT 120 ENVIRONMENT "MB8_FORCE_PORTABLE=1")
