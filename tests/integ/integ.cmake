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
foreach(_integ static tls edge config load reload default process options regress provider metrics
        negotiation resume resume_redis proxy stream hostile privs closenotify bulk gwfix
        gwconf mtls proxyproto upstream_tls reqbuf pq h2defence h2proxy gwall h2parity)
  add_test(NAME integ_${_integ}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/integ/test_${_integ}.py
                   $<TARGET_FILE:tlsgate>)
  set_tests_properties(integ_${_integ} PROPERTIES
                       TIMEOUT 120
                       LABELS integ
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endforeach()
# integ_default uses the fixed port 8443 (never two at once); it prints SKIPPED and exits 0
# when the port is taken.
set_tests_properties(integ_default PROPERTIES RESOURCE_LOCK tlsgate_port_8443
                     SKIP_REGULAR_EXPRESSION "SKIPPED test_embedded_default")
# integ_http2: HTTP/2 with curl --http2, nghttp and h2load (Debian nghttp2-client); its
# async-TLS case needs fakeaccel.so (FAKEACCEL_DIR) and is skipped without it.
# integ_h2defence (above): adversarial HTTP/2 clients from raw frames (python3-h2).
add_test(NAME integ_http2
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/integ/test_http2.py
                 $<TARGET_FILE:tlsgate>)
set_tests_properties(integ_http2 PROPERTIES
                     TIMEOUT 120
                     LABELS integ
                     ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;FAKEACCEL_DIR=${CMAKE_BINARY_DIR}")
# integ_async: async TLS (ssl_async, ssl_provider) with the test-only accelerator provider
# tests/fakeaccel (FAKEACCEL_DIR/fakeaccel.so: build the fakeaccel target first; without
# it every test prints SKIPPED and CTest reports the test as skipped).
if(TARGET fakeaccel)
  add_test(NAME integ_async
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/integ/test_async.py
                   $<TARGET_FILE:tlsgate>)
  set_tests_properties(integ_async PROPERTIES
                       TIMEOUT 150
                       LABELS integ
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;FAKEACCEL_DIR=${CMAKE_BINARY_DIR}"
                       SKIP_REGULAR_EXPRESSION "SKIPPED test_[a-z_]+: no fakeaccel.so")
endif()
