# unit_sock_sock: the socket layer (gw/sock/sock.c, buf.c, async.c) over a socketpair with
# an echo protocol: plain and TLS echo, lingering close, handshake and protocol timeouts,
# and async TLS on the fake accelerator (a paused handshake resumed by its wake; a socket
# closed while paused is drained, freed only after the job ends). Skips the async cases
# without fakeaccel.so.
tlsgate_unit_test(sock_sock)
target_compile_definitions(unit_sock_sock_test PRIVATE FAKEACCEL_MODULE_DIR="${CMAKE_BINARY_DIR}")
target_link_libraries(unit_sock_sock_test PRIVATE gw Threads::Threads)
add_dependencies(unit_sock_sock_test fakeaccel)
set_tests_properties(unit_sock_sock PROPERTIES TIMEOUT 60)
