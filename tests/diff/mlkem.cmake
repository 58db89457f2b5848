# mb8 ML-KEM-768 (mb8/include/mb8/mlkem.h) against @noble/post-quantum's answers
# (mlkem768_vectors.txt, made once by mlkem768_vectors.mjs), OpenSSL's SHA-3 / SHAKE, and
# between its kernels. MLKEM_DIFF_SEED=<n> repeats a random run; MLKEM_DIFF_QUICK=1 runs
# few iterations (valgrind).
add_executable(mlkem_diff_test ${CMAKE_SOURCE_DIR}/tests/diff/mlkem_diff_test.c)
target_link_libraries(mlkem_diff_test PRIVATE mb8 OpenSSL::Crypto PkgConfig::CMOCKA)
target_include_directories(mlkem_diff_test PRIVATE ${CMAKE_SOURCE_DIR}/mb8/src)
target_compile_definitions(mlkem_diff_test PRIVATE
                           MLKEM_VECTORS="${CMAKE_SOURCE_DIR}/tests/diff/mlkem768_vectors.txt")
add_test(NAME diff_mlkem COMMAND mlkem_diff_test)
set_tests_properties(diff_mlkem PROPERTIES TIMEOUT 120)
add_test(NAME diff_mlkem_portable COMMAND mlkem_diff_test)
set_tests_properties(diff_mlkem_portable PROPERTIES TIMEOUT 120 ENVIRONMENT "MB8_FORCE_PORTABLE=1")
