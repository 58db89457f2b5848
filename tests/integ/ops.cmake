# Operations (issue #12): OCSP stapling from files, `tlsgate -V`, the Debian package and
# the man pages. Registered like integ.cmake's tests.
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
foreach(_integ stapling version sdnotify)
  add_test(NAME integ_${_integ}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/integ/test_${_integ}.py
                   $<TARGET_FILE:tlsgate>)
  set_tests_properties(integ_${_integ} PROPERTIES
                       TIMEOUT 120
                       LABELS integ
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endforeach()
