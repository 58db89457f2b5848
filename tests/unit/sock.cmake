# unit_sock: the socket layer (gw/sock) over a socketpair with an echo protocol: plain and
# TLS echo, lingering close, handshake and protocol timeouts, and async TLS on the fake
# accelerator (a paused handshake resumed by its wake; a socket closed while paused is
# drained, freed only after the job ends). Skips the async cases without fakeaccel.so.
add_executable(unit_sock_test ${CMAKE_SOURCE_DIR}/tests/unit/sock_test.c)
target_include_directories(unit_sock_test PRIVATE ${CMAKE_SOURCE_DIR}/gw)
target_compile_definitions(unit_sock_test PRIVATE FAKEACCEL_MODULE_DIR="${CMAKE_BINARY_DIR}")
target_link_libraries(unit_sock_test PRIVATE gw PkgConfig::CMOCKA Threads::Threads)
add_dependencies(unit_sock_test fakeaccel)
add_test(NAME unit_sock COMMAND unit_sock_test)
set_tests_properties(unit_sock PROPERTIES TIMEOUT 60)
