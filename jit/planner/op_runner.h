#pragma once
// What the tuner measures with: something that can execute one op under a given plan. The
// reference runner (reference_runner.h) does it in plain C++; the JIT kernels plug in here too.
#include <string>

#include "jit/planner/planner.h"
#include "runtime/op_shape.h"
#include "runtime/thread_pool.h"

namespace ckjit::planner {

class OpRunner {
 public:
  virtual ~OpRunner() = default;
  // Recorded with every measurement in the profile, so a profile says what was timed.
  virtual std::string name() const = 0;
  // Empty when this runner can execute `shape` in reasonable time, else the reason it cannot.
  virtual std::string cannot_run(const OpShape& shape) const = 0;
  // Allocates and fills inputs for `shape` (not timed). Called once before the shape's runs.
  virtual void prepare(const OpShape& shape) = 0;
  // Executes the op once with plan.tiling on `pool` (pool.size() == plan.tiling.threads).
  virtual void run(const Plan& plan, ThreadPool& pool) = 0;
};

}  // namespace ckjit::planner
