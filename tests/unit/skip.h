// CKJIT_SKIP(reason): a test case that cannot run on this CPU (it lacks the ISA, or CKJIT_MAX_ISA
// caps it away) ends here and CTest reports it as skipped, never as passed.
//
// The macro prints the line "[ckjit-skip] <reason>" to stdout and returns from the test case;
// tests/CMakeLists.txt sets SKIP_REGULAR_EXPRESSION "\[ckjit-skip\]" on every discovered test, so
// CTest marks a test whose output has that line "Skipped" (and counts it in "tests skipped").
//
// Rules, because CTest marks a test skipped whenever its output matches, even if it failed:
//  - Use it only at the top of a TEST_CASE body, before any CHECK/REQUIRE: the whole test case must
//    have done nothing else. A skip after a check (passed or failed) is refused: the macro FAILs
//    the test instead (a doctest listener in skip.cpp counts the checks of the running test case).
//  - Use it in the TEST_CASE body itself, not in a helper: its `return` leaves the enclosing
//    function only.
//  - Where part of a test case runs everywhere and part needs an ISA, split it into two test cases
//    and skip only the second.
// `reason` may be a stream expression, as with MESSAGE: CKJIT_SKIP(isa_name(p) << " not usable here").
#pragma once

#include <doctest/doctest.h>

#include <sstream>
#include <string>

namespace ckjit::test {

// Checks (CHECK, REQUIRE, ... passed or failed) run so far in the current test case.
int checks_in_current_test();

// Prints "[ckjit-skip] <reason>" on a line of its own to stdout and flushes.
void print_skip_marker(const std::string& reason);

}  // namespace ckjit::test

#define CKJIT_SKIP(reason)                                                                          \
  do {                                                                                              \
    std::ostringstream ckjit_skip_reason_;                                                          \
    ckjit_skip_reason_ << reason;                                                                   \
    const int ckjit_skip_checks_ = ::ckjit::test::checks_in_current_test();                        \
    if (ckjit_skip_checks_ != 0)                                                                    \
      FAIL("CKJIT_SKIP after " << ckjit_skip_checks_ << " checks (a skip must come first): "        \
                               << ckjit_skip_reason_.str());                                        \
    ::ckjit::test::print_skip_marker(ckjit_skip_reason_.str());                                     \
    return;                                                                                         \
  } while (0)
