# The CI fuzz smoke: a few seconds of real fuzzing per harness, as ctest
# entries `fuzz_smoke.<harness>`. Each run starts from the committed seeds
# (read only: new inputs go to a scratch corpus in the build tree), so it
# both replays every seed and mutates from them.
#
# Used twice: by tests/fuzz/ in the libFuzzer build itself (the harness
# targets), and by the ordinary g++ build when SHAPESHIFT_FUZZ_HARNESS_DIR
# names a libFuzzer build's tests/fuzz directory (scripts/test.sh builds
# one first when clang-14 and libclang-rt-14-dev are installed), so the
# suite CI runs ends with one ctest summary that includes the smoke.
set(SHAPESHIFT_FUZZ_SMOKE_SECONDS 5 CACHE STRING "Seconds each fuzz_smoke.<harness> ctest entry fuzzes")
set(SHAPESHIFT_FUZZ_HARNESSES onnx_import sym_expr predicate guard_program)

# `executable`: a generator expression for a target, or a path.
function(shapeshift_fuzz_smoke_test harness executable)
  set(scratch ${CMAKE_BINARY_DIR}/fuzz-smoke/${harness})
  file(MAKE_DIRECTORY ${scratch}/corpus ${scratch}/artifacts)
  add_test(NAME fuzz_smoke.${harness}
           COMMAND ${executable} -max_total_time=${SHAPESHIFT_FUZZ_SMOKE_SECONDS} -rss_limit_mb=2048 -timeout=10
                   -print_final_stats=1 -artifact_prefix=${scratch}/artifacts/
                   ${scratch}/corpus ${SHAPESHIFT_ROOT}/tests/fuzz/corpus/${harness})
  # libFuzzer's own deadline plus the seed replay and start-up.
  math(EXPR limit "${SHAPESHIFT_FUZZ_SMOKE_SECONDS} + 120")
  set_tests_properties(fuzz_smoke.${harness} PROPERTIES TIMEOUT ${limit})
endfunction()
