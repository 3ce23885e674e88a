#pragma once
// Whether this test binary was built with a sanitizer: GCC defines __SANITIZE_ADDRESS__ and
// __SANITIZE_THREAD__, clang (the ASan build's compiler when tools/dev.sh finds it) answers
// __has_feature instead.
#if defined(__has_feature)
#define CKJIT_HAS_FEATURE(x) __has_feature(x)
#else
#define CKJIT_HAS_FEATURE(x) 0
#endif

#if defined(__SANITIZE_ADDRESS__) || CKJIT_HAS_FEATURE(address_sanitizer)
#define CKJIT_TEST_ASAN 1
#else
#define CKJIT_TEST_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__) || CKJIT_HAS_FEATURE(thread_sanitizer)
#define CKJIT_TEST_TSAN 1
#else
#define CKJIT_TEST_TSAN 0
#endif
