# The provider's batching policy (prov/policy.c) alone: pure C, no OpenSSL, fed with
# synthetic arrival times (flush rule, cap, quiet time, adaptive switches and probes).
# tests/prov/policy_test.c; CTest name unit_policy (a unit test: the quick tier).
add_executable(unit_policy_test ${CMAKE_SOURCE_DIR}/tests/prov/policy_test.c
                                ${CMAKE_SOURCE_DIR}/prov/policy.c)
target_include_directories(unit_policy_test PRIVATE ${CMAKE_SOURCE_DIR}/prov)
target_link_libraries(unit_policy_test PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit_policy COMMAND unit_policy_test)
