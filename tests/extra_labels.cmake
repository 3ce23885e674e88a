# Read by ctest after doctest's discovered entries (tests/CMakeLists.txt, TEST_INCLUDE_FILES): the
# end-to-end cases that stay in the Release run (tools/dev.sh test leaves label e2e out of the
# sanitizer run, and `tools/dev.sh check` leaves it out too). A doctest case has one suite, so its
# second label is given here by name.
foreach(t IN LISTS ckjit_tests_TESTS)
  if(t MATCHES "^serve e2e: SIGTERM drains" OR t MATCHES "^serve e2e: a second SIGINT" OR t MATCHES "^serve haproxy:")
    set_tests_properties("${t}" PROPERTIES LABELS "serve;e2e")
  elseif(t MATCHES "Slurm recipe on a real single-node Slurm" OR t MATCHES "^ckjit ocr: killed with SIGKILL")
    set_tests_properties("${t}" PROPERTIES LABELS "ocr;e2e")
  endif()
endforeach()
