#include "vision/amx_bf16_linear.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "jit/amx_bf16_layout.h"
#include "jit/bf16_rows.h"
#include "jit/executor.h"
#include "jit/isa_select.h"
#include "jit/reference.h"
#include "runtime/error.h"
#include "runtime/gcc12_avx512_warnings.h"
#include "runtime/quants/quants.h"
#include "vision/vision_ops.h"

namespace ckjit::vision {
namespace {

constexpr int64_t kRows = jit::kAmxDenseRows, kCols = jit::AmxBf16Layout::kPairCols;

jit::KernelSpec block_spec(int64_t k) {
  jit::KernelSpec s;
  s.op = jit::Op::Dense, s.wtype = TensorType::BF16, s.atype = TensorType::BF16, s.isa = jit::IsaPath::Amx;
  s.mr = jit::kAmxDenseRows, s.nr = jit::kAmxDensePanels, s.kc = int(k), s.k = k;
  return s;
}


CKJIT_AVX512_INTRINSICS_BEGIN
// y[i][j] = (c[i][j] + b[j]) (+ r[i][j]) for rows of one 32-column block (c: rows x 32 floats),
// its first `cols` columns (the AMX path only: AVX-512 is there).
__attribute__((target("avx512f"))) void add_bias_residual(const float* c, int64_t rows, const float* b, int64_t cols, float* y,
                                                         int64_t ldy, const float* r, int64_t ldr) {
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xffff) : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? __mmask16(0xffff) : cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
  const __m512 b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);
  for (int64_t i = 0; i < rows; ++i) {
    __m512 y0 = _mm512_add_ps(_mm512_loadu_ps(c + i * kCols), b0), y1 = _mm512_add_ps(_mm512_loadu_ps(c + i * kCols + 16), b1);
    if (r) {
      y0 = _mm512_add_ps(y0, _mm512_maskz_loadu_ps(m0, r + i * ldr));
      y1 = _mm512_add_ps(y1, _mm512_maskz_loadu_ps(m1, r + i * ldr + 16));
    }
    _mm512_mask_storeu_ps(y + i * ldy, m0, y0);
    _mm512_mask_storeu_ps(y + i * ldy + 16, m1, y1);
  }
}
// F16 -> f32 (exact) with vcvtph2ps, k a multiple of 32 (the AMX path only).
__attribute__((target("avx512f"))) void f16_to_f32_rows(const uint16_t* x, float* y, int64_t k) {
  for (int64_t i = 0; i < k; i += 16)
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
}
CKJIT_AVX512_INTRINSICS_END

}  // namespace

bool AmxBf16Linear::runs(const gguf::TensorInfo& w, const topo::Isa& isa) {
  return w.ne[0] > 0 && w.ne[0] % jit::kAmxDenseK == 0 && jit::kernel_runs(block_spec(w.ne[0]), isa);
}

AmxBf16Linear::AmxBf16Linear(const gguf::TensorInfo& w, const gguf::TensorInfo& bias, const topo::Isa& isa, int threads)
    : name_(w.name), n_(w.ne[1]), k_(w.ne[0]), file_type_(w.type.type) {
  if (w.ne[2] != 1 || w.ne[3] != 1 || n_ < 1 || k_ < 1) throw Error(name_ + ": not a matrix (" + w.shape_string() + ")");
  if (!runs(w, isa)) throw Error(name_ + ": no AMX-BF16 kernel for k = " + std::to_string(k_) + " on this CPU");
  if (bias.type.type != TensorType::F32 || bias.n_elements != n_)
    throw Error(std::string(bias.name) + ": bias must be F32 [" + std::to_string(n_) + "]");
  if (file_type_ != TensorType::Q8_0 && file_type_ != TensorType::F16 && file_type_ != TensorType::BF16 &&
      file_type_ != TensorType::F32)
    throw Error(name_ + ": type " + std::string(w.type.name) + " has no vision kernel (F16, BF16, F32, Q8_0)");
  bias_.assign(reinterpret_cast<const float*>(bias.data), reinterpret_cast<const float*>(bias.data) + n_);
  kernel_ = &jit::global_code_cache().get(block_spec(k_));

  // Column pairs split over the repack workers: a pair's 32 rows dequantized to f32, then its B
  // tiles written in order (rounded to bf16); the columns past n stay zero.
  const jit::AmxBf16Layout lay{n_, k_};
  layout_bytes_ = lay.bytes();
  w_ = jit::alloc_packed(size_t(layout_bytes_), name_.c_str());
  const int tasks = int(std::max<int64_t>(1, std::min<int64_t>(std::max(1, threads), lay.pairs())));
  jit::run_repack_tasks(tasks, [&](int t) {
    std::vector<float> row(static_cast<size_t>(k_));
    std::vector<uint16_t> rows(static_cast<size_t>(kCols * k_));  // the pair's 32 rows in bf16
    for (int64_t p = lay.pairs() * t / tasks; p < lay.pairs() * (t + 1) / tasks; ++p) {
      const int64_t c0 = p * kCols, cols = std::min(n_, c0 + kCols) - c0;
      std::fill(rows.begin() + cols * k_, rows.end(), uint16_t(0));
      for (int64_t c = 0; c < cols; ++c) {
        const uint8_t* src = w.data + (c0 + c) * int64_t(w.row_bytes());
        if (file_type_ == TensorType::F16) f16_to_f32_rows(reinterpret_cast<const uint16_t*>(src), row.data(), k_);
        else quant::dequantize_row(file_type_, src, row.data(), k_);
        jit::to_bf16(row.data(), rows.data() + c * k_, k_);
      }
      // B tile row j of step s, panel q: for its 16 columns the bf16 pair (k = 32 s + 2 j, + 1).
      uint32_t* out = reinterpret_cast<uint32_t*>(w_.get() + p * lay.pair_bytes());
      for (int64_t s = 0; s < lay.steps(); ++s)
        for (int64_t q = 0; q < 2; ++q)
          for (int64_t j = 0; j < 16; ++j)
            for (int64_t c = q * 16; c < q * 16 + 16; ++c)
              std::memcpy(out++, rows.data() + c * k_ + s * jit::AmxBf16Layout::kStepK + 2 * j, 4);
    }
  });

  const std::string kernel = std::string("jit dense amx ") + kernel_->spec().to_string() + " (tdpbf16ps, bias and residual after)";
  desc_ = OpDesc{n_, k_, tensor_type_info(file_type_).name, "bf16", kernel, kernel};
  const std::string prep = "f32 -> bf16 rows (vcvtneps2bf16)";
  prepare_desc_ = OpDesc{0, k_, "", "f32 -> bf16", prep, prep};
}

std::string AmxBf16Linear::describe() const {
  return name_ + " " + tensor_type_info(file_type_).name + " [" + std::to_string(k_) + " x " + std::to_string(n_) +
         "] -> bf16 amx " + kernel_->spec().to_string() + " (rounded to BF16 at load)";
}

void AmxBf16Linear::prepare(Workers& pool, const float* x, int64_t ldx, int64_t m, float* xr) const {
  uint16_t* out = reinterpret_cast<uint16_t*>(xr);
  for_rows(pool, m, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      if (jit::scalar_twins()) {
        for (int64_t kk = 0; kk < k_; ++kk) out[i * k_ + kk] = quant::f32_to_bf16(x[i * ldx + kk]);
      } else {
        jit::to_bf16(x + i * ldx, out + i * k_, k_);
      }
    }
  });
}

void AmxBf16Linear::matmul(Workers& pool, const float* xr, int64_t m, float* y, int64_t ldy, const float* residual,
                           int64_t ldr) const {
  if (m <= 0) return;
  const uint16_t* x = reinterpret_cast<const uint16_t*>(xr);
  const jit::AmxBf16Layout lay{n_, k_};
  // Row groups of whole 32-row blocks whose bf16 rows fit in about half of L2 (they are reused for
  // every column pair of the task); column pairs split so there are at least 4 tasks per worker.
  const int64_t blocks = (m + kRows - 1) / kRows;
  const int64_t group = std::clamp<int64_t>((768 * 1024) / (kRows * k_ * 2), 1, 16);
  const int64_t row_groups = (blocks + group - 1) / group;
  const int64_t want = std::max<int64_t>(1, (4 * int64_t(pool.size()) + row_groups - 1) / row_groups);
  const int64_t pair_chunk = std::max<int64_t>(1, (lay.pairs() + want - 1) / want);
  const int64_t col_groups = (lay.pairs() + pair_chunk - 1) / pair_chunk;
  const int64_t full_rows = m / kRows * kRows;
  pool.run(size_t(row_groups * col_groups), [&](size_t task, int) {
    const int64_t rg = int64_t(task) / col_groups, cg = int64_t(task) % col_groups;
    const int64_t r0 = rg * group * kRows, r1 = std::min(m, r0 + group * kRows);
    const int64_t body = std::max<int64_t>(0, std::min(r1, full_rows) - r0);  // whole blocks read in place
    // The partial last block, zero-padded to 32 rows, and the f32 block results of one pair.
    thread_local std::vector<uint16_t> tail;
    thread_local std::vector<float> c;
    if (r1 > r0 + body) {
      tail.assign(size_t(kRows * k_), 0);
      std::memcpy(tail.data(), x + (r0 + body) * k_, size_t((r1 - r0 - body) * k_) * 2);
    }
    c.resize(size_t(group * kRows * kCols));
    for (int64_t p = cg * pair_chunk; p < std::min(lay.pairs(), (cg + 1) * pair_chunk); ++p) {
      jit::GemmArgs a;
      a.w = w_.get() + p * lay.pair_bytes();
      a.ldx = k_ * 2, a.ldy = kCols * 4, a.n = kCols, a.ldr = lay.pair_bytes();
      auto run = [&](const uint16_t* rows, int64_t count, float* out) {
        a.x = rows, a.m = count, a.y = out;
        if (jit::scalar_twins()) jit::reference_kernel(kernel_->spec(), &a);
        else kernel_->as<jit::GemmFn>()(&a);
      };
      if (body > 0) run(x + r0 * k_, body, c.data());
      if (r1 > r0 + body) run(tail.data(), kRows, c.data() + body * kCols);
      const int64_t c0 = p * kCols;
      add_bias_residual(c.data(), r1 - r0, bias_.data() + c0, std::min(n_, c0 + kCols) - c0, y + r0 * ldy + c0, ldy,
                        residual ? residual + r0 * ldr + c0 : nullptr, ldr);
    }
  });
}

}  // namespace ckjit::vision
