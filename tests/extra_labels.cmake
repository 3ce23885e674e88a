# Read by ctest after doctest's discovered entries (tests/CMakeLists.txt, TEST_INCLUDE_FILES): the
# end-to-end cases that stay in the Release run (tools/dev.sh test leaves label e2e out of the
# sanitizer run, and `tools/dev.sh check` leaves it out too). A doctest case has one suite, so its
# second label is given here by name. The longest cases also get a COST, so a clean clone's run
# (no timings from an earlier one) starts them first instead of ending on them.
set(_ckjit_e2e 0)
set(_ckjit_sweep 0)
foreach(t IN LISTS ckjit_tests_TESTS)
  if(t MATCHES "^structured output: 100 sampled generations" OR t MATCHES "^quant parity with llama.cpp ggml")
    set_tests_properties("${t}" PROPERTIES COST 100)
  elseif(t MATCHES "^(numerical contract|decoder parity with llama.cpp|vision parity with llama.cpp|serve hostile: slow clients|scheduler: streams joining|same seed gives the same bytes|batched decode: each sequence)")
    # 10-28 s each under ASan (CMake before 4.0 cannot read back the timings of names with spaces,
    # so a COST is the only order ctest has).
    set_tests_properties("${t}" PROPERTIES COST 50)
  endif()
  if(t MATCHES "^serve e2e: SIGTERM drains" OR t MATCHES "^serve e2e: a second SIGINT" OR t MATCHES "^serve haproxy:")
    set_tests_properties("${t}" PROPERTIES LABELS "serve;e2e")
    math(EXPR _ckjit_e2e "${_ckjit_e2e} + 1")
  elseif(t MATCHES "Slurm recipe on a real single-node Slurm" OR t MATCHES "^ckjit ocr: killed with SIGKILL"
         OR t MATCHES "^ckjit ocr: a 2100x2100 page"
         OR t MATCHES "^ckjit ocr: a journal on a small filesystem")
    set_tests_properties("${t}" PROPERTIES LABELS "ocr;e2e")
    math(EXPR _ckjit_e2e "${_ckjit_e2e} + 1")
  elseif(t MATCHES "^numerical contract: --dump-logits capped at avxvnni" OR t MATCHES "^ckjit run: CKJIT_MAX_ISA=avxvnni")
    # Label sweep: out of the ASan+UBSan run only (tests/README.md says which and why). The cap
    # matrices run there at two caps (the avx2 floor and avx512); synth's bytes run there in every
    # case that synthesizes; one decoder and one vision parity case stay there (the odd shapes).
    set_tests_properties("${t}" PROPERTIES LABELS "decoder;sweep")
    math(EXPR _ckjit_sweep "${_ckjit_sweep} + 1")
  elseif(t MATCHES "^same seed gives the same bytes at any thread count")
    set_tests_properties("${t}" PROPERTIES LABELS "synth;sweep")
    math(EXPR _ckjit_sweep "${_ckjit_sweep} + 1")
  elseif(t MATCHES "^decoder parity with llama.cpp: " AND NOT t MATCHES "tiny models of several seeds")
    set_tests_properties("${t}" PROPERTIES LABELS "parity;sweep")
    math(EXPR _ckjit_sweep "${_ckjit_sweep} + 1")
  elseif(t MATCHES "^vision parity with llama.cpp: " AND NOT t MATCHES "an odd-shaped tower")
    set_tests_properties("${t}" PROPERTIES LABELS "vision;sweep")
    math(EXPR _ckjit_sweep "${_ckjit_sweep} + 1")
  endif()
endforeach()
# A renamed case would silently lose its label and run (slowly) under the sanitizers.
if(ckjit_tests_TESTS AND NOT _ckjit_e2e EQUAL 8)
  message(WARNING "tests/extra_labels.cmake: ${_ckjit_e2e} of the 8 end-to-end cases found by name: update the patterns")
endif()
if(ckjit_tests_TESTS AND NOT _ckjit_sweep EQUAL 12)
  message(WARNING "tests/extra_labels.cmake: ${_ckjit_sweep} of the 12 sweep cases found by name: update the patterns")
endif()
