// The listener behind CKJIT_SKIP (skip.h): counts the checks of the running test case, so a skip
// that comes after a check fails instead of hiding that check behind CTest's "Skipped".
#include "tests/unit/skip.h"

#include <atomic>
#include <iostream>

namespace ckjit::test {
namespace {

std::atomic<int> g_checks{0};

struct CheckCounter : doctest::IReporter {
  explicit CheckCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { g_checks = 0; }
  // Subcases run the body again; checks of the earlier passes still count.
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override { ++g_checks; }  // every assert, passed or not
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

int checks_in_current_test() { return g_checks.load(); }

void print_skip_marker(const std::string& reason) { std::cout << "[ckjit-skip] " << reason << std::endl; }

}  // namespace ckjit::test

REGISTER_LISTENER("ckjit-skip-check-counter", 1, ckjit::test::CheckCounter);
