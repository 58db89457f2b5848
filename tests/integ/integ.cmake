# Integration tests: Python 3 (standard library) driving the real tlsgate binary with
# real clients (curl, openssl s_client, wrk). Each test_<x>.py is one CTest test
# integ_<x>; every server listens on 127.0.0.1 on free ports in its own temp dir, so the
# tests may run in parallel (ctest -j). Run one by hand:
#   python3 tests/integ/test_<x>.py build/tlsgate [test_function...]
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "python3 not found: the integration tests (integ_*) are not registered")
  return()
endif()
# tlsgate_integ_test(NAME [TIMEOUT s] [ENV VAR=VALUE...] [SKIP_REGEX re]): the CTest test
# integ_NAME runs tests/integ/test_NAME.py on the tlsgate binary (label integ, TIMEOUT 120
# unless given, PYTHONDONTWRITEBYTECODE=1 plus ENV; SKIP_REGEX: output that means skipped).
function(tlsgate_integ_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TIMEOUT;SKIP_REGEX" "ENV")
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 120)
  endif()
  add_test(NAME integ_${name}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/integ/test_${name}.py
                   $<TARGET_FILE:tlsgate>)
  set_tests_properties(integ_${name} PROPERTIES TIMEOUT ${arg_TIMEOUT} LABELS integ)
  set_property(TEST integ_${name} PROPERTY ENVIRONMENT PYTHONDONTWRITEBYTECODE=1 ${arg_ENV})
  if(arg_SKIP_REGEX)
    set_tests_properties(integ_${name} PROPERTIES SKIP_REGULAR_EXPRESSION "${arg_SKIP_REGEX}")
  endif()
endfunction()

foreach(_integ static tls edge config load reload default process options regress provider metrics
        negotiation resume resume_redis proxy stream hostile privs closenotify bulk gwfix
        gwconf mtls proxyproto upstream_tls reqbuf pq h2defence h2proxy gwall h2parity)
  tlsgate_integ_test(${_integ})
endforeach()
# integ_default uses the fixed port 8443 (never two at once); it prints SKIPPED and exits 0
# when the port is taken.
set_tests_properties(integ_default PROPERTIES RESOURCE_LOCK tlsgate_port_8443
                     SKIP_REGULAR_EXPRESSION "SKIPPED test_embedded_default")
# integ_http2: HTTP/2 with curl --http2, nghttp and h2load (Debian nghttp2-client); its
# async-TLS case needs fakeaccel.so (FAKEACCEL_DIR) and is skipped without it.
# integ_h2defence (above): adversarial HTTP/2 clients from raw frames (python3-h2).
tlsgate_integ_test(http2 ENV FAKEACCEL_DIR=${CMAKE_BINARY_DIR})
# integ_upstream_async: upstream handshakes in async jobs (ssl_async on) with the tlsgate
# provider; its fake-accelerator cases need fakeaccel.so and print SKIPPED without it.
tlsgate_integ_test(upstream_async ENV FAKEACCEL_DIR=${CMAKE_BINARY_DIR})
# integ_async: async TLS (ssl_async, ssl_provider) with the test-only accelerator provider
# tests/fakeaccel (FAKEACCEL_DIR/fakeaccel.so: build the fakeaccel target first; without
# it every test prints SKIPPED and CTest reports the test as skipped).
if(TARGET fakeaccel)
  tlsgate_integ_test(async TIMEOUT 150 ENV FAKEACCEL_DIR=${CMAKE_BINARY_DIR}
                     SKIP_REGEX "SKIPPED test_[a-z_]+: no fakeaccel.so")
endif()
