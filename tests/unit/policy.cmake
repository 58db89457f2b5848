# The provider's batching policy (prov/policy.c) alone: pure C, no OpenSSL, fed with
# synthetic arrival times (flush rule, cap, quiet time, adaptive switches and probes).
add_executable(unit_policy_test ${CMAKE_SOURCE_DIR}/tests/unit/policy_test.c
                                ${CMAKE_SOURCE_DIR}/prov/policy.c)
target_include_directories(unit_policy_test PRIVATE ${CMAKE_SOURCE_DIR}/prov)
target_link_libraries(unit_policy_test PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit_policy COMMAND unit_policy_test)
