# tlsgate_fuzz_target(NAME SOURCES...): a fuzz target tests/fuzz/NAME.c whose corpus is
# tests/fuzz/corpus/NAME/. CTest replays the corpus (test fuzz_replay_NAME) with the normal
# compiler; tests/fuzz/run.sh builds the same sources with clang -fsanitize=fuzzer.
function(tlsgate_fuzz_target name)
  add_executable(fuzz_replay_${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/${name}.c
                 ${CMAKE_SOURCE_DIR}/tests/fuzz/replay.c ${ARGN})
  target_include_directories(fuzz_replay_${name} PRIVATE ${CMAKE_SOURCE_DIR}/gw)
  add_test(NAME fuzz_replay_${name}
           COMMAND fuzz_replay_${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${name})
endfunction()
