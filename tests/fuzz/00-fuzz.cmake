# tlsgate_fuzz_target(NAME SOURCES...): a fuzz target tests/fuzz/NAME.c whose corpus is
# tests/fuzz/corpus/NAME/. CTest replays the corpus (test fuzz_replay_NAME) with the normal
# compiler; tests/fuzz/run.sh builds the same sources with clang -fsanitize=fuzzer.
function(tlsgate_fuzz_target name)
  # tests/fuzz/run.sh reads the sources from the target's "// fuzz-sources:" comment (and
  # the "// X.c ..." lines that continue it): it must name the same files as SOURCES.
  file(STRINGS ${CMAKE_SOURCE_DIR}/tests/fuzz/${name}.c lines REGEX "^// ")
  set(listed "")
  set(in_list 0)
  foreach(line IN LISTS lines)
    if(line MATCHES "^// fuzz-sources: (.*)$")
      set(in_list 1)
    elseif(NOT (in_list AND line MATCHES "^// (([^ ]+\\.c ?)+)$"))
      set(in_list 0)
    endif()
    if(in_list)
      string(REGEX REPLACE "^// (fuzz-sources: )?" "" files "${line}")
      separate_arguments(files UNIX_COMMAND "${files}")
      foreach(f IN LISTS files)
        list(APPEND listed ${CMAKE_SOURCE_DIR}/${f})
      endforeach()
    endif()
  endforeach()
  if(listed)
    set(given ${ARGN})
    list(SORT listed)
    list(SORT given)
    if(NOT listed STREQUAL given)
      message(FATAL_ERROR "tests/fuzz/${name}.c: its // fuzz-sources: (${listed}) differ from "
                          "tlsgate_fuzz_target's (${given}); tests/fuzz/run.sh would build "
                          "another program")
    endif()
  endif()
  add_executable(fuzz_replay_${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/${name}.c
                 ${CMAKE_SOURCE_DIR}/tests/fuzz/replay.c ${ARGN})
  target_include_directories(fuzz_replay_${name} PRIVATE ${CMAKE_SOURCE_DIR}/gw)
  add_test(NAME fuzz_replay_${name}
           COMMAND fuzz_replay_${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${name})
endfunction()
