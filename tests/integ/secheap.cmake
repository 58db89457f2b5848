# The secure heap (ssl_secure_heap): secheap_probe measures what a handshake in flight
# holds there (docs/security.md); integ_secheap checks the start-up warning, the default
# sized from worker_connections and the error logged when the heap is full.
find_package(Python3 COMPONENTS Interpreter)
add_executable(secheap_probe ${CMAKE_SOURCE_DIR}/tests/integ/secheap_probe.c
                             ${CMAKE_SOURCE_DIR}/gw/core/lsan.c)
target_include_directories(secheap_probe PRIVATE ${CMAKE_SOURCE_DIR}/gw)
target_link_libraries(secheap_probe PRIVATE OpenSSL::SSL OpenSSL::Crypto)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
tlsgate_integ_test(secheap ENV SECHEAP_PROBE=$<TARGET_FILE:secheap_probe>
                   FAKEACCEL_DIR=${CMAKE_BINARY_DIR})
