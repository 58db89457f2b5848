# Test tiers: every CTest test gets one of the labels quick, slow, valgrind, interop (and
# tsan when it is one of the tests the ThreadSanitizer build runs). README.md and
# CONTRIBUTING.md:
#   ctest -L quick     the developer loop: unit, differential (short loops), fuzz corpus
#                      replays, fast integration; at least 30 tests, under a minute on 2 cores
#   ctest -L slow      full differential runs, the long integration tests, bench smoke tests
#   ctest -L valgrind  the constant-time (ct_*, secrets poisoned) and memcheck runs
#   ctest -L interop   other programs load our provider / drive our server (openssl
#                      s_server, HAProxy)
#   ctest -L tsan      in build-tsan/ (make tsan): the tests whose code crosses threads
#   make test / ctest  all of them (CI)
# A test named nowhere below is quick when its name says it is a unit test (unit_*), a fuzz
# replay (fuzz_replay_*) or a short differential run (diff_*_quick), else slow: a new test
# never slows the developer loop by accident. Move it here when it is fast.
#
# tlsgate_test_tiers() labels the tests of the directory it is called in (CMake 3.25 sets
# test properties per directory): tests/CMakeLists.txt and the top level (dist.cmake) call it.

function(tlsgate_test_tiers)
  # (the lists live in the function: it is called from two directories)
  # (seconds each, measured with ctest -j2 on the shared 2-core machine: under 7)
  set(TLSGATE_QUICK_TESTS
      layering conf_docs_in_sync hardening man_pages fakeaccel_unit
      prov_unit prov_kdf prov_gcm prov_gcm_off prov_regress_setpeer prov_regress_fork
      integ_config integ_static integ_tls integ_stream integ_metrics integ_default
      integ_version integ_closenotify)
  set(TLSGATE_INTEROP_TESTS prov_interop fakeaccel_tls)
  set(TLSGATE_TSAN_TESTS
      prov_unit prov_regress_fork prov_kdf prov_gcm prov_gcm_off fakeaccel_unit unit_net_loop
      integ_async integ_provider integ_upstream_async)
  get_property(_tests DIRECTORY PROPERTY TESTS)
  foreach(_t IN LISTS _tests)
    get_test_property(${_t} LABELS _labels)
    if(NOT _labels)
      set(_labels "")
    endif()
    if(_t IN_LIST TLSGATE_QUICK_TESTS)
      set(_tier quick)
    elseif("valgrind" IN_LIST _labels OR _t MATCHES "^ct_" OR _t MATCHES "_valgrind$")
      set(_tier valgrind)
    elseif(_t IN_LIST TLSGATE_INTEROP_TESTS OR "interop" IN_LIST _labels)
      set(_tier interop)
    elseif(_t MATCHES "^(unit_|fuzz_replay_)" OR _t MATCHES "^diff_.*_quick$")
      set(_tier quick)
    else()
      set(_tier slow)
    endif()
    if(NOT _tier IN_LIST _labels)
      set_property(TEST ${_t} APPEND PROPERTY LABELS ${_tier})
    endif()
    # ASan/UBSan's Debug build runs the differential loops several times slower: with the
    # 2-core machine at load 12, diff_p384, diff_p384_portable and diff_x25519 ran out of
    # their 120 s in CI's ASan phase. Budgets scale with the build.
    if(TLSGATE_SANITIZE)
      get_test_property(${_t} TIMEOUT _timeout)
      if(_timeout)
        math(EXPR _timeout "${_timeout} * 3")
        set_tests_properties(${_t} PROPERTIES TIMEOUT ${_timeout})
      endif()
    endif()
    if(_t IN_LIST TLSGATE_TSAN_TESTS)
      set_property(TEST ${_t} APPEND PROPERTY LABELS tsan)
      if(TLSGATE_TSAN)
        # A race stops the process at once: a worker's abort is logged by its master as a
        # crash, which the integration harness fails on; a test program exits non-zero.
        # die_after_fork=0: the provider and fakeaccel start their threads again in a
        # child of a threaded parent, which is what test_fork checks. The provider suite
        # runs its short form (PROV_TEST_QUICK) under TSan's 5-15x slowdown, with the
        # adaptive policy off (TLSGATE_ADAPTIVE=off): that slowdown makes it choose single
        # operations, and the suite's counter checks then fail for timing, not for races.
        set_property(TEST ${_t} APPEND PROPERTY ENVIRONMENT
                     "TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:die_after_fork=0:second_deadlock_stack=1"
                     PROV_TEST_QUICK=1 TLSGATE_ADAPTIVE=off TLSGATE_TSAN=1)
        set_tests_properties(${_t} PROPERTIES TIMEOUT 900)
      endif()
    endif()
  endforeach()
endfunction()
