# Constant-time and memory checks of mb8's portable kernels under valgrind memcheck
# (valgrind cannot run AVX-512: MB8_FORCE_PORTABLE=1 selects the portable path). diff_rsa
# and x25519_diff_test mark the private key and blinding values, or the scalars and points,
# undefined, so any branch or memory index that depends on them is a memcheck error (a ctgrind check, undefined-value errors ON); see
# docs/constant-time.md. Not in sanitizer builds: valgrind and ASan do not mix.
find_program(VALGRIND_EXECUTABLE valgrind)
if(VALGRIND_EXECUTABLE AND NOT TLSGATE_SANITIZE)
  add_test(NAME ct_rsa COMMAND ${VALGRIND_EXECUTABLE} --error-exitcode=1 --quiet
                               --leak-check=full $<TARGET_FILE:diff_rsa>)
  set_tests_properties(ct_rsa PROPERTIES TIMEOUT 240
                       ENVIRONMENT "MB8_FORCE_PORTABLE=1;MB8_RSA_ITERS=1")
  add_test(NAME ct_x25519 COMMAND ${VALGRIND_EXECUTABLE} --error-exitcode=1 --quiet
                                        --leak-check=full $<TARGET_FILE:x25519_diff_test>)
  set_tests_properties(ct_x25519 PROPERTIES TIMEOUT 240
                       ENVIRONMENT "MB8_FORCE_PORTABLE=1;X25519_DIFF_QUICK=1")
  # p256_diff_test marks the private scalars, nonces and digests undefined.
  add_test(NAME ct_p256 COMMAND ${VALGRIND_EXECUTABLE} --error-exitcode=1 --quiet
                                      --leak-check=full $<TARGET_FILE:p256_diff_test>)
  set_tests_properties(ct_p256 PROPERTIES TIMEOUT 240
                       ENVIRONMENT "MB8_FORCE_PORTABLE=1;P256_DIFF_QUICK=1")
  # p384_diff_test: the same marking for P-384.
  add_test(NAME ct_p384 COMMAND ${VALGRIND_EXECUTABLE} --error-exitcode=1 --quiet
                                      --leak-check=full $<TARGET_FILE:p384_diff_test>)
  set_tests_properties(ct_p384 PROPERTIES TIMEOUT 600
                       ENVIRONMENT "MB8_FORCE_PORTABLE=1;P384_DIFF_QUICK=1")
endif()
# mlkem_diff_test marks d, z, m and the decapsulation key's secret part undefined.
if(VALGRIND_EXECUTABLE AND NOT TLSGATE_SANITIZE)
  add_test(NAME ct_mlkem COMMAND ${VALGRIND_EXECUTABLE} --error-exitcode=1 --quiet
                                       --leak-check=full $<TARGET_FILE:mlkem_diff_test>)
  set_tests_properties(ct_mlkem PROPERTIES TIMEOUT 240
                       ENVIRONMENT "MB8_FORCE_PORTABLE=1;MLKEM_DIFF_QUICK=1")
endif()
