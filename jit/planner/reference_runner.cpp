#include "jit/planner/reference_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "jit/planner/task_grid.h"
#include "runtime/error.h"

namespace ckjit::planner {
namespace {

uint32_t next_random(uint32_t& state) {
  state = state * 1664525u + 1013904223u;
  return state >> 8;
}

// Output scaling keeps integer sums in a float-friendly range; identical in both versions.
constexpr float kIntScale = 1.0f / 4096.0f;

float silu(float g) { return g / (1.0f + std::exp(-g)); }

template <class X, class W, class Acc>
struct Kernel {
  const X* x;
  const W* w;       // [mats][N][K]
  Acc* acc;         // [mats][M][N]
  float* y;
  int64_t M, N, K;
  int mats;
  bool integer;

  // One mr x nr register tile over k in [k0, k1): loads the partial sums, adds k in ascending
  // order, stores them back (so kc blocking keeps the naive summation order).
  void tile(int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t k0, int64_t k1, std::vector<Acc>& regs) const {
    const int64_t rows = i1 - i0, cols = j1 - j0;
    regs.resize(std::size_t(rows * cols));
    for (int m = 0; m < mats; ++m) {
      Acc* a = acc + std::size_t(m) * M * N;
      const W* wm = w + std::size_t(m) * N * K;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) regs[std::size_t(r * cols + c)] = a[(i0 + r) * N + j0 + c];
      for (int64_t k = k0; k < k1; ++k)
        for (int64_t r = 0; r < rows; ++r) {
          Acc xv = Acc(x[(i0 + r) * K + k]);
          for (int64_t c = 0; c < cols; ++c) regs[std::size_t(r * cols + c)] += xv * Acc(wm[(j0 + c) * K + k]);
        }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) a[(i0 + r) * N + j0 + c] = regs[std::size_t(r * cols + c)];
    }
  }

  // A cache block: nr-wide weight panels outside, mr-row activation panels inside.
  void block(Range rows, Range cols, int64_t k0, int64_t k1, const Tiling& t, std::vector<Acc>& regs) const {
    for (int64_t j = cols.begin; j < cols.end; j += t.nr)
      for (int64_t i = rows.begin; i < rows.end; i += t.mr)
        tile(i, std::min(i + t.mr, rows.end), j, std::min(j + t.nr, cols.end), k0, k1, regs);
  }

  void task(Range rows, Range cols, const Tiling& t) const {
    thread_local std::vector<Acc> regs;
    if (t.order == LoopOrder::n_k_m) {
      for (int64_t jc = cols.begin; jc < cols.end; jc += t.nc)
        for (int64_t pc = 0; pc < K; pc += t.kc)
          for (int64_t ic = rows.begin; ic < rows.end; ic += t.mc)
            block({ic, std::min(ic + t.mc, rows.end)}, {jc, std::min(jc + t.nc, cols.end)}, pc,
                  std::min(pc + t.kc, K), t, regs);
    } else {
      for (int64_t ic = rows.begin; ic < rows.end; ic += t.mc)
        for (int64_t jc = cols.begin; jc < cols.end; jc += t.nc)
          for (int64_t pc = 0; pc < K; pc += t.kc)
            block({ic, std::min(ic + t.mc, rows.end)}, {jc, std::min(jc + t.nc, cols.end)}, pc,
                  std::min(pc + t.kc, K), t, regs);
    }
    epilogue(rows, cols);
  }

  void epilogue(Range rows, Range cols) const {
    for (int64_t i = rows.begin; i < rows.end; ++i)
      for (int64_t j = cols.begin; j < cols.end; ++j) {
        float g = integer ? float(acc[i * N + j]) * kIntScale : float(acc[i * N + j]);
        if (mats == 2) {
          const Acc u_raw = acc[std::size_t(M * N) + i * N + j];
          float u = integer ? float(u_raw) * kIntScale : float(u_raw);
          y[i * N + j] = silu(g) * u;
        } else {
          y[i * N + j] = g;
        }
      }
  }
};

template <class F>
void with_kernel(ReferenceOperands& o, F&& f) {
  const OpShape& s = o.shape;
  if (o.integer) {
    Kernel<uint8_t, int8_t, int32_t> k{o.x_u8.data(), o.w_s8.data(), o.acc_i32.data(), o.y.data(),
                                       s.m, s.n, s.k, s.weight_matrices(), true};
    std::fill(o.acc_i32.begin(), o.acc_i32.end(), 0);
    f(k);
  } else {
    Kernel<float, float, float> k{o.x_f32.data(), o.w_f32.data(), o.acc_f32.data(), o.y.data(),
                                  s.m, s.n, s.k, s.weight_matrices(), false};
    std::fill(o.acc_f32.begin(), o.acc_f32.end(), 0.0f);
    f(k);
  }
}

}  // namespace

ReferenceOperands ReferenceOperands::make(const OpShape& s, uint32_t seed) {
  validate(s);
  ReferenceOperands o;
  o.shape = s;
  const auto& info = tensor_type_info(s.wtype);
  o.integer = !(s.wtype == TensorType::F32 || s.wtype == TensorType::F16 || s.wtype == TensorType::BF16 ||
                s.wtype == TensorType::F64 || info.block_elems == 1);
  const std::size_t xs = std::size_t(s.m * s.k), ws = std::size_t(s.weight_matrices() * s.n * s.k);
  const std::size_t as = std::size_t(s.weight_matrices() * s.m * s.n);
  uint32_t st = seed;
  if (o.integer) {
    o.x_u8.resize(xs);
    o.w_s8.resize(ws);
    for (auto& v : o.x_u8) v = uint8_t(next_random(st));
    for (auto& v : o.w_s8) v = int8_t(next_random(st));
    o.acc_i32.resize(as);
  } else {
    o.x_f32.resize(xs);
    o.w_f32.resize(ws);
    for (auto& v : o.x_f32) v = float(int(next_random(st) % 2001) - 1000) / 1000.0f;
    for (auto& v : o.w_f32) v = float(int(next_random(st) % 2001) - 1000) / 8000.0f;
    o.acc_f32.resize(as);
  }
  o.y.assign(std::size_t(s.m * s.n), 0.0f);
  return o;
}

void reference_blocked(ReferenceOperands& o, const Tiling& t, ThreadPool& pool) {
  if (t.threads != pool.size())
    throw Error("reference: tiling wants " + std::to_string(t.threads) + " threads, pool has " +
                std::to_string(pool.size()));
  if (t.mr < 1 || t.nr < 1 || t.mc < 1 || t.nc < 1 || t.kc < 1) throw Error("reference: blocks must be positive");
  const OpShape& s = o.shape;
  const TaskGrid grid{s, t};
  with_kernel(o, [&](auto& k) {
    pool.run(grid.tasks(), [&](std::size_t task, int) { k.task(grid.rows(task), grid.cols(task), t); });
  });
}

void reference_naive(ReferenceOperands& o) {
  const OpShape& s = o.shape;
  with_kernel(o, [&](auto& k) {
    using AccT = std::remove_reference_t<decltype(*k.acc)>;
    for (int m = 0; m < k.mats; ++m)
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          AccT sum = 0;
          for (int64_t kk = 0; kk < s.k; ++kk)
            sum += AccT(k.x[i * s.k + kk]) * AccT(k.w[std::size_t(m) * s.n * s.k + j * s.k + kk]);
          k.acc[std::size_t(m) * s.m * s.n + i * s.n + j] = sum;
        }
    k.epilogue({0, s.m}, {0, s.n});
  });
}

std::string ReferenceRunner::name() const {
  return "reference (plain C++ u8xs8->i32 / f32, honours threads and blocks; not the JIT kernels)";
}

std::string ReferenceRunner::cannot_run(const OpShape& s) const {
  if (s.macs() > max_macs_) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.3g MMAC is beyond the reference runner's limit of %.3g MMAC (scalar code)",
                  s.macs() / 1e6, max_macs_ / 1e6);
    return buf;
  }
  if (s.k > 65536) return "K > 65536 could overflow the reference's int32 sums";
  return "";
}

void ReferenceRunner::prepare(const OpShape& s) { ops_ = ReferenceOperands::make(s, 12345u); }

void ReferenceRunner::run(const Plan& plan, ThreadPool& pool) {
  if (!(plan.shape == ops_.shape)) throw Error("reference runner: prepare() was called for another shape");
  reference_blocked(ops_, plan.tiling, pool);
}

}  // namespace ckjit::planner
