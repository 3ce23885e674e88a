# ckjit_discover_tests(target [PROPERTIES name value ...]): one ctest entry per doctest case, labelled
# with its TEST_SUITE, like doctest_discover_tests(... ADD_LABELS 1) but from ONE run of the binary
# (`--list-test-cases --reporters=xml` gives each case's name and suite): doctest's own discovery
# starts the binary once more per case for its suite (~430 processes: 40 s per build under ASan,
# minutes under qemu). The entries' list is ${target}_TESTS for TEST_INCLUDE_FILES scripts read after.
function(ckjit_discover_tests target)
  cmake_parse_arguments(ARG "" "" "PROPERTIES" ${ARGN})
  set(cases "${CMAKE_CURRENT_BINARY_DIR}/${target}_cases.cmake")
  set(include "${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake")
  get_property(emulator TARGET ${target} PROPERTY CROSSCOMPILING_EMULATOR)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} "-DEXE=$<TARGET_FILE:${target}>" "-DEMULATOR=${emulator}" "-DOUT=${cases}"
            "-DLIST_VAR=${target}_TESTS" "-DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}" "-DPROPS=${ARG_PROPERTIES}"
            -P "${PROJECT_SOURCE_DIR}/cmake/discover_tests_run.cmake"
    BYPRODUCTS "${cases}" VERBATIM)
  file(WRITE "${include}"
    "if(EXISTS \"${cases}\")\n  include(\"${cases}\")\nelse()\n  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include}")
endfunction()
