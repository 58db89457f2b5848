# Constant-time and memory checks of mb8's portable kernels under valgrind memcheck
# (valgrind cannot run AVX-512: MB8_FORCE_PORTABLE=1 selects the portable path). Each
# program marks its secrets undefined, so any branch or memory index that depends on them
# is a memcheck error (a ctgrind check, undefined-value errors ON); see
# docs/constant-time.md: diff_rsa the private key and blinding values, x25519_diff_test
# the scalars and points, p256_diff_test and p384_diff_test the private scalars, nonces
# and digests, mlkem_diff_test d, z, m and the decapsulation key's secret part. Not in
# sanitizer builds: valgrind and ASan do not mix. Each entry: NAME:PROGRAM:VARIABLE that
# shortens its loops:TIMEOUT (s). ct_rsa takes 120-220 s alone and ran out of 240 s at
# load 9-11 in three full runs this session, hence 480.
find_program(VALGRIND_EXECUTABLE valgrind)
if(VALGRIND_EXECUTABLE AND NOT TLSGATE_SANITIZE)
  foreach(_entry rsa:diff_rsa:MB8_RSA_ITERS=1:480 x25519:x25519_diff_test:X25519_DIFF_QUICK=1:240
                 p256:p256_diff_test:P256_DIFF_QUICK=1:240 p384:p384_diff_test:P384_DIFF_QUICK=1:600
                 mlkem:mlkem_diff_test:MLKEM_DIFF_QUICK=1:240)
    string(REPLACE ":" ";" _entry "${_entry}")
    list(GET _entry 0 _name)
    list(GET _entry 1 _prog)
    list(GET _entry 2 _short)
    list(GET _entry 3 _timeout)
    add_test(NAME ct_${_name} COMMAND ${VALGRIND_EXECUTABLE} --error-exitcode=1 --quiet
                                      --leak-check=full $<TARGET_FILE:${_prog}>)
    set_tests_properties(ct_${_name} PROPERTIES TIMEOUT ${_timeout}
                         ENVIRONMENT "MB8_FORCE_PORTABLE=1;${_short}")
  endforeach()
endif()
