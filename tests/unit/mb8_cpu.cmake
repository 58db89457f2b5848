# mb8/src/common/cpu.c: CPU feature detection and kernel dispatch (tests/unit/mb8_cpu_test.c).
tlsgate_unit_test(mb8_cpu)
target_link_libraries(unit_mb8_cpu_test PRIVATE mb8)
