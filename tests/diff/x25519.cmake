# mb8 X25519 (mb8/include/mb8/x25519.h) against RFC 7748 vectors and OpenSSL's X25519.
# Environment: X25519_DIFF_SEED=<n> repeats a random run; X25519_DIFF_QUICK=1 runs few
# iterations (for valgrind: MB8_FORCE_PORTABLE=1 X25519_DIFF_QUICK=1 valgrind ...).
add_executable(x25519_diff_test ${CMAKE_SOURCE_DIR}/tests/diff/x25519_diff_test.c)
target_link_libraries(x25519_diff_test PRIVATE mb8 OpenSSL::Crypto PkgConfig::CMOCKA)
# x25519/x25519_internal.h: the kernels, called directly by test_ifma_vs_reference
target_include_directories(x25519_diff_test PRIVATE ${CMAKE_SOURCE_DIR}/mb8/src)
add_test(NAME diff_x25519 COMMAND x25519_diff_test)
set_tests_properties(diff_x25519 PROPERTIES TIMEOUT 120)
# The same tests on the portable kernel (diff_x25519 runs the IFMA one where the CPU has it).
add_test(NAME diff_x25519_portable COMMAND x25519_diff_test)
set_tests_properties(diff_x25519_portable PROPERTIES TIMEOUT 120
                     ENVIRONMENT "MB8_FORCE_PORTABLE=1")
