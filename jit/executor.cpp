#include "jit/executor.h"

#include <atomic>
#include <cmath>
#include <cstdlib>

namespace ckjit::jit {

namespace {
std::atomic<Executor> g_executor{Executor::generated};
}

void set_executor(Executor e) { g_executor.store(e, std::memory_order_relaxed); }
Executor executor() { return g_executor.load(std::memory_order_relaxed); }

bool test_fault_requested(const std::string& weight_name) {
  const char* f = std::getenv("CKJIT_TEST_FAULT");
  return f && *f && weight_name == f;
}

void apply_test_fault(float* y, long rows, long ldy) {
  for (long r = 0; r < rows; ++r) y[r * ldy] += std::fabs(y[r * ldy]) / 8 + 1.0f / 64;
}

}  // namespace ckjit::jit
