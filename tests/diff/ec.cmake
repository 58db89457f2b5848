# mb8 P-256 and P-384 (mb8/include/mb8/p256.h, p384.h) against OpenSSL and RFC 5903 /
# RFC 6979 vectors: one program per curve, its known answers in <curve>_diff_test.c and
# the tests in ec_diff_test.h. Environment: P256_DIFF_SEED=<n> (P384_...) repeats a random
# run; P256_DIFF_QUICK=1 runs few iterations (for valgrind: MB8_FORCE_PORTABLE=1
# P256_DIFF_QUICK=1 valgrind ...).
foreach(_curve p256 p384)
  add_executable(${_curve}_diff_test ${CMAKE_SOURCE_DIR}/tests/diff/${_curve}_diff_test.c)
  target_link_libraries(${_curve}_diff_test PRIVATE mb8 OpenSSL::Crypto PkgConfig::CMOCKA)
  # the kernels' internal header, for the IFMA-vs-reference comparison
  target_include_directories(${_curve}_diff_test PRIVATE ${CMAKE_SOURCE_DIR}/mb8/src/${_curve})
  # diff_<curve> runs the kernel this CPU selects (IFMA when available, and then also
  # compares it with the reference); diff_<curve>_portable the same tests on the portable
  # reference.
  add_test(NAME diff_${_curve} COMMAND ${_curve}_diff_test)
  set_tests_properties(diff_${_curve} PROPERTIES TIMEOUT 120)
  add_test(NAME diff_${_curve}_portable COMMAND ${_curve}_diff_test)
  set_tests_properties(diff_${_curve}_portable PROPERTIES TIMEOUT 120
                       ENVIRONMENT "MB8_FORCE_PORTABLE=1")
endforeach()
