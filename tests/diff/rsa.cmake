# mb8 RSA private CRT vs OpenSSL's raw RSA (tests/diff/rsa_diff_test.c). The test includes
# mb8/src/rsa/bn52.h only to corrupt a cached key for the fault-check case.
add_executable(diff_rsa ${CMAKE_SOURCE_DIR}/tests/diff/rsa_diff_test.c)
target_include_directories(diff_rsa PRIVATE ${CMAKE_SOURCE_DIR}/mb8/src/rsa)
target_compile_definitions(diff_rsa PRIVATE RSA_KEYS_DIR="${CMAKE_SOURCE_DIR}/tests/diff/rsa_keys")
target_link_libraries(diff_rsa PRIVATE mb8 OpenSSL::Crypto PkgConfig::CMOCKA Threads::Threads)
add_test(NAME diff_rsa COMMAND diff_rsa)
set_tests_properties(diff_rsa PROPERTIES TIMEOUT 120)
# The same test on the portable kernel (the default run takes the IFMA kernel where the CPU
# has it): both kernels must agree with OpenSSL.
add_test(NAME diff_rsa_portable COMMAND diff_rsa)
set_tests_properties(diff_rsa_portable PROPERTIES TIMEOUT 120 ENVIRONMENT MB8_FORCE_PORTABLE=1)
