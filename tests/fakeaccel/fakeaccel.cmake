# fakeaccel: a TEST-ONLY OpenSSL 3 provider that behaves like a hardware accelerator
# (private-key operations answered later by a background thread, pausing ASYNC jobs the
# way Intel QAT's provider does), for the gateway's async-TLS tests. See
# tests/fakeaccel/README.md.
set(FAKEACCEL_DIR ${CMAKE_SOURCE_DIR}/tests/fakeaccel)

# The module: ${CMAKE_BINARY_DIR}/fakeaccel.so, loadable with -provider-path
# ${CMAKE_BINARY_DIR} -provider fakeaccel, or `module = .../fakeaccel.so` in a config.
add_library(fakeaccel MODULE ${FAKEACCEL_DIR}/fakeaccel.c ${FAKEACCEL_DIR}/accel.c
                             ${FAKEACCEL_DIR}/keymgmt.c ${FAKEACCEL_DIR}/signature.c
                             ${FAKEACCEL_DIR}/asym_cipher.c
                             ${CMAKE_SOURCE_DIR}/prov/waitfd.c ${CMAKE_SOURCE_DIR}/prov/upcalls.c)
target_include_directories(fakeaccel PRIVATE ${CMAKE_SOURCE_DIR}/prov)
set_target_properties(fakeaccel PROPERTIES PREFIX "" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}
                                           C_VISIBILITY_PRESET hidden)
target_compile_options(fakeaccel PRIVATE -Wunused-parameter)
# Never unloaded: wait-fd cleanup functions of ours stay registered in applications'
# ASYNC_WAIT_CTXs, and pthread_atfork handlers in the process, after OpenSSL drops us.
target_link_options(fakeaccel PRIVATE -Wl,-z,nodelete -Wl,--no-undefined)
if(TLSGATE_SANITIZE)
  # The module is loaded by programs built without the sanitizers too (openssl s_server),
  # which cannot load an instrumented library: keep it plain in sanitizer builds.
  target_compile_options(fakeaccel PRIVATE -fno-sanitize=all)
  target_link_options(fakeaccel PRIVATE -fno-sanitize=all)
endif()
target_link_libraries(fakeaccel PRIVATE OpenSSL::Crypto Threads::Threads)

# 1. The provider driven directly: ASYNC jobs, both wake-up modes, results against the
#    default provider, failure injection, counters, fork.
add_executable(fakeaccel_test ${FAKEACCEL_DIR}/fakeaccel_test.c)
target_compile_definitions(fakeaccel_test PRIVATE FAKEACCEL_MODULE_DIR="${CMAKE_BINARY_DIR}")
target_link_libraries(fakeaccel_test PRIVATE PkgConfig::CMOCKA OpenSSL::Crypto Threads::Threads)
target_include_directories(fakeaccel_test PRIVATE ${CMAKE_SOURCE_DIR}/tests/prov) # test_util.h
add_dependencies(fakeaccel_test fakeaccel)
add_test(NAME fakeaccel_unit COMMAND fakeaccel_test)
set_tests_properties(fakeaccel_unit PROPERTIES TIMEOUT 120)

# 2. openssl s_server -async with the provider preferred, openssl s_client handshakes.
add_test(NAME fakeaccel_tls
         COMMAND bash ${FAKEACCEL_DIR}/tls_test.sh ${CMAKE_BINARY_DIR})
set_tests_properties(fakeaccel_tls PROPERTIES TIMEOUT 120)
