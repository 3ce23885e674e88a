// run_planned: every output element of an m x n op lands in exactly one tile, tiles respect the
// plan's mc x nc bounds and start on register-block boundaries, whatever the tiling, the row
// count (shorter chunks reuse a prefill plan) and the pool size.
#include <doctest/doctest.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "graph/linear_plan.h"

using namespace ckjit;

TEST_SUITE("decoder") {

TEST_CASE("run_planned covers the output once with the plan's tiles / for any split / order and thread count") {
  Workers pool(2);
  for (SplitAxis split : {SplitAxis::n, SplitAxis::m})
    for (LoopOrder order : {LoopOrder::n_k_m, LoopOrder::m_n_k})
      for (int threads : {1, 2, 3})
        for (int64_t m : {1, 5, 64, 130})
          for (int64_t n : {16, 48, 200, 1000}) {
            Tiling t;
            t.threads = threads;
            t.mr = 4;
            t.nr = 32;
            t.mc = 24;
            t.nc = 96;
            t.split = split;
            t.order = order;
            std::vector<int> hits(size_t(m * n), 0);
            std::mutex mu;
            bool bounds_ok = true;
            graph::run_planned(pool, t, m, n, [&](const jit::Tile& tile) {
              std::lock_guard<std::mutex> lock(mu);
              bounds_ok = bounds_ok && tile.m_end - tile.m_begin <= t.mc && tile.n_end - tile.n_begin <= t.nc &&
                          tile.n_begin % t.nr == 0 && tile.m_begin % t.mr == 0 && tile.m_end <= m && tile.n_end <= n;
              for (int64_t i = tile.m_begin; i < tile.m_end; ++i)
                for (int64_t j = tile.n_begin; j < tile.n_end; ++j) ++hits[size_t(i * n + j)];
            });
            CAPTURE(t.describe());
            CAPTURE(m);
            CAPTURE(n);
            CHECK(bounds_ok);
            CHECK(std::count(hits.begin(), hits.end(), 1) == m * n);
          }
}

}  // TEST_SUITE
