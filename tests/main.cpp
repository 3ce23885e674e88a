// doctest's main, and one rule of ours: a run filtered to named cases (ctest's entries run
// `--test-case=NAME`) that ran no case at all fails. doctest_discover_tests once split names at
// ';' into entries that matched nothing, ran nothing and passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstring>

namespace {

std::atomic<int> g_cases_run{0};

struct CaseCounter : doctest::IReporter {
  explicit CaseCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { ++g_cases_run; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("case_counter", 1, CaseCounter);

bool names_cases(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (const char* p : {"--test-case=", "-tc=", "--dt-test-case=", "--dt-tc="})
      if (std::strncmp(argv[i], p, std::strlen(p)) == 0) return true;
  return false;
}

bool lists(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--list", 6) == 0 || std::strncmp(argv[i], "-lt", 3) == 0 || std::strncmp(argv[i], "-ls", 3) == 0 ||
        std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--count") == 0 ||
        std::strcmp(argv[i], "-c") == 0)
      return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int status = context.run();
  if (context.shouldExit() || lists(argc, argv)) return status;
  if (status == 0 && names_cases(argc, argv) && g_cases_run == 0) {
    std::fprintf(stderr, "tests: the filter matched no test case: nothing ran, so nothing passed\n");
    return 1;
  }
  return status;
}
