#pragma once
// How a plan cuts an op into pool tasks: split N gives nc-wide column strips over all rows,
// split M gives mc-high row strips over all columns. Each task owns its output region, so no
// two tasks write the same element and no reduction is needed. Executors (the reference runner,
// the JIT kernels' driver) use this so they all cut the work the way the planner costed it.
#include <cstddef>
#include <cstdint>

#include "runtime/op_shape.h"

namespace ckjit::planner {

struct Range {
  int64_t begin = 0, end = 0;
};

struct TaskGrid {
  OpShape shape;
  Tiling tiling;

  std::size_t tasks() const {
    return tiling.split == SplitAxis::n ? std::size_t((shape.n + tiling.nc - 1) / tiling.nc)
                                        : std::size_t((shape.m + tiling.mc - 1) / tiling.mc);
  }
  Range rows(std::size_t task) const {
    if (tiling.split == SplitAxis::n) return {0, shape.m};
    int64_t b = int64_t(task) * tiling.mc;
    return {b, b + tiling.mc < shape.m ? b + tiling.mc : shape.m};
  }
  Range cols(std::size_t task) const {
    if (tiling.split == SplitAxis::m) return {0, shape.n};
    int64_t b = int64_t(task) * tiling.nc;
    return {b, b + tiling.nc < shape.n ? b + tiling.nc : shape.n};
  }
};

// Calls fn(tile_rows, tile_cols) for the mc x nc tiles of rows x cols, in the tiling's loop order
// (K is not blocked in the JIT kernels: each tile runs over the whole of K).
template <class F>
void for_each_tile(const Tiling& t, Range rows, Range cols, const F& fn) {
  auto tile = [&](int64_t i, int64_t j) {
    fn(Range{i, i + t.mc < rows.end ? i + t.mc : rows.end}, Range{j, j + t.nc < cols.end ? j + t.nc : cols.end});
  };
  if (t.order == LoopOrder::n_k_m) {
    for (int64_t j = cols.begin; j < cols.end; j += t.nc)
      for (int64_t i = rows.begin; i < rows.end; i += t.mc) tile(i, j);
  } else {
    for (int64_t i = rows.begin; i < rows.end; i += t.mc)
      for (int64_t j = cols.begin; j < cols.end; j += t.nc) tile(i, j);
  }
}

}  // namespace ckjit::planner
