# The quick tier's differential tests (ctest -L quick): the same programs as diff_* with
# their short loops (every case, fewer random inputs), on the kernel this CPU selects and
# on the portable one. The full runs (diff_*) are in the slow tier; tests/tiers.cmake gives
# the labels. Each entry: NAME:PROGRAM:VARIABLE that shortens its loops.
foreach(_entry p256:p256_diff_test:P256_DIFF_QUICK=1 p384:p384_diff_test:P384_DIFF_QUICK=1
               x25519:x25519_diff_test:X25519_DIFF_QUICK=1 rsa:diff_rsa:MB8_RSA_ITERS=1)
  string(REPLACE ":" ";" _entry "${_entry}")
  list(GET _entry 0 _name)
  list(GET _entry 1 _prog)
  list(GET _entry 2 _short)
  add_test(NAME diff_${_name}_quick COMMAND ${_prog})
  add_test(NAME diff_${_name}_portable_quick COMMAND ${_prog})
  set_tests_properties(diff_${_name}_quick PROPERTIES TIMEOUT 60 ENVIRONMENT "${_short}")
  set_tests_properties(diff_${_name}_portable_quick PROPERTIES
                       TIMEOUT 60 ENVIRONMENT "MB8_FORCE_PORTABLE=1;${_short}")
endforeach()
