# Sources named for an architecture build only there (the house rule): *_x86.cpp, *avx2*.cpp,
# *avx512*.cpp, *_amx*.cpp and x86/ folders on x86; *_a64.cpp on AArch64. One filter for every
# layer that globs its sources (runtime/, jit/).
function(ckjit_filter_arch_sources var)
  set(srcs ${${var}})
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|i.86)$")
    list(FILTER srcs EXCLUDE REGEX "_a64\\.cpp$")
  else()
    list(FILTER srcs EXCLUDE REGEX "(/x86/|(_x86|avx2|avx512|_amx)[^/]*\\.cpp$)")
  endif()
  set(${var} ${srcs} PARENT_SCOPE)
endfunction()
