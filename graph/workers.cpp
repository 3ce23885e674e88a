#include "graph/workers.h"

#include <algorithm>

namespace ckjit::graph {

Workers::Workers(int threads, std::vector<int> cpus, int spin_us) {
  ThreadPoolOptions o;
  o.threads = std::max(1, threads);
  o.cpus = std::move(cpus);
  o.pin_caller = !o.cpus.empty();
  o.spin_us = spin_us;
  pool_ = std::make_unique<ThreadPool>(o);
}

Range split_range(int64_t count, int64_t parts, int64_t i, int64_t align) {
  const int64_t units = (count + align - 1) / align;
  const int64_t b = units * i / parts, e = units * (i + 1) / parts;
  return {std::min(count, b * align), std::min(count, e * align)};
}

}  // namespace ckjit::graph
