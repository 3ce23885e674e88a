#include "vision/int8_linear.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "jit/executor.h"
#include "jit/isa_select.h"
#include "jit/kernels.h"
#include "jit/weight_kernels.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"
#include "vision/vision_ops.h"

namespace ckjit::vision {
namespace {

constexpr int64_t kBlock = quant::QK8_0;

int64_t q8_0_row_bytes(int64_t k) { return k / kBlock * int64_t(sizeof(quant::BlockQ8_0)); }

// The GEMM kernel of one path with the decoder's fixed register blocks (graph/linear.cpp spec_for):
// AMX 16-row tiles x 2 panels, AVX-512 4 x 3, AVX-VNNI 4 x 2, AVX2 2 x 2.
jit::KernelSpec gemm_spec(jit::IsaPath path, int64_t k) {
  jit::KernelSpec s;
  s.op = jit::Op::Gemm, s.wtype = TensorType::Q8_0, s.atype = TensorType::Q8_0, s.isa = path, s.k = k;
  s.epilogue = jit::Epilogue::ResidualAdd;
  s.mr = path == jit::IsaPath::Amx ? 16 : path == jit::IsaPath::Avx512 || path == jit::IsaPath::AvxVnni ? 4 : 2;
  s.nr = path == jit::IsaPath::Avx512 ? 3 : 2;
  return s;
}

}  // namespace

bool Int8Linear::supports(const gguf::TensorInfo& w) { return w.ne[0] > 0 && w.ne[0] % kBlock == 0; }

double Int8Linear::packed_bytes_for(int64_t n, int64_t k) {
  const int64_t P = 16;  // the wider panel bounds both layouts' padding
  return double((n + P - 1) / P) * double(k / kBlock) * double(jit::weight_kernels(TensorType::Q8_0)->panel_block_bytes(int(P)));
}

Int8Linear::Int8Linear(const gguf::TensorInfo& w, const gguf::TensorInfo& bias, const topo::Isa& isa, int threads)
    : name_(w.name), n_(w.ne[1]), k_(w.ne[0]), file_type_(w.type.type) {
  if (w.ne[2] != 1 || w.ne[3] != 1 || n_ < 1 || k_ < 1) throw Error(name_ + ": not a matrix (" + w.shape_string() + ")");
  if (!supports(w)) throw Error(name_ + ": k = " + std::to_string(k_) + " is not a multiple of 32 (Q8_0 blocks)");
  if (bias.type.type != TensorType::F32 || bias.n_elements != n_)
    throw Error(std::string(bias.name) + ": bias must be F32 [" + std::to_string(n_) + "]");
  if (file_type_ != TensorType::Q8_0 && file_type_ != TensorType::F16 && file_type_ != TensorType::BF16 &&
      file_type_ != TensorType::F32)
    throw Error(name_ + ": type " + std::string(w.type.name) + " has no vision kernel (F16, BF16, F32, Q8_0)");
  bias_.assign(reinterpret_cast<const float*>(bias.data), reinterpret_cast<const float*>(bias.data) + n_);

  // The first path (best first) whose Q8_0 GEMM emits; its panel width is the packed layout.
  for (jit::IsaPath path : jit::isa_paths(isa)) {
    try {
      kernel_ = &jit::global_code_cache().get(gemm_spec(path, k_));
      break;
    } catch (const Error&) {
      // this path has no such kernel: the next one
    }
  }
  if (!kernel_) throw Error(name_ + ": no Q8_0 GEMM kernel runs on this CPU");
  const int panel = jit::panel_cols(kernel_->spec().isa);
  jit::KernelSpec q;
  q.op = jit::Op::Quantize, q.wtype = TensorType::F32, q.atype = TensorType::Q8_0, q.isa = jit::IsaPath::Avx2, q.k = k_;
  quantize_ = &jit::global_code_cache().get(q);

  const jit::WeightKernels* q8 = jit::weight_kernels(TensorType::Q8_0);
  if (file_type_ == TensorType::Q8_0) {
    w_ = q8->repack(w.data, n_, k_, panel, threads);
  } else {
    // A float matrix: quantized row by row as llama-quantize writes Q8_0, rows split over the
    // repack workers.
    std::vector<uint8_t> blocks(size_t(n_ * q8_0_row_bytes(k_)));
    const int tasks = int(std::max<int64_t>(1, std::min<int64_t>(std::max(1, threads), n_)));
    jit::run_repack_tasks(tasks, [&](int t) {
      std::vector<float> row(static_cast<size_t>(k_));
      for (int64_t r = n_ * t / tasks; r < n_ * (t + 1) / tasks; ++r) {
        quant::dequantize_row(file_type_, w.data + r * int64_t(w.row_bytes()), row.data(), k_);
        quant::quantize_row(TensorType::Q8_0, row.data(), blocks.data() + r * q8_0_row_bytes(k_), k_);
      }
    });
    w_ = q8->repack(blocks.data(), n_, k_, panel, threads);
  }

  const std::string kernel = std::string("jit gemm ") + jit::isa_name(kernel_->spec().isa) + " " + kernel_->spec().to_string() +
                             " (int32 block sums, bias as residual row)";
  desc_ = OpDesc{n_, k_, tensor_type_info(file_type_).name, "Q8_0", kernel, kernel};
  const std::string qname = "jit quantize_row_q8_0 (llama.cpp's x86 bytes)";
  prepare_desc_ = OpDesc{0, k_, "", "f32 -> Q8_0", qname, qname};
}

int64_t Int8Linear::row_bytes() const { return q8_0_row_bytes(k_); }

std::string Int8Linear::describe() const {
  std::string s = name_ + " " + tensor_type_info(file_type_).name + " [" + std::to_string(k_) + " x " + std::to_string(n_) +
                  "] -> int8 " + jit::isa_name(kernel_->spec().isa) + " Q8_0 x Q8_0";
  if (file_type_ != TensorType::Q8_0) s += " (quantized to Q8_0 at load)";
  return s + ", mr=" + std::to_string(kernel_->spec().mr) + " nr=" + std::to_string(kernel_->spec().nr);
}

void Int8Linear::prepare(Workers& pool, const float* x, int64_t ldx, int64_t m, float* xr) const {
  uint8_t* out = reinterpret_cast<uint8_t*>(xr);
  const int64_t rb = row_bytes();
  for_rows(pool, m, [&](int64_t r0, int64_t r1) {
    if (jit::scalar_twins()) {
      for (int64_t i = r0; i < r1; ++i)
        quant::quantize_row_q8_0_x86(x + i * ldx, reinterpret_cast<quant::BlockQ8_0*>(out + i * rb), k_);
      return;
    }
    jit::QuantizeArgs a;
    a.x = x + r0 * ldx, a.y = out + r0 * rb, a.rows = r1 - r0, a.ldx = ldx * 4, a.ldy = rb;
    quantize_->as<jit::QuantizeFn>()(&a);
  });
}

void Int8Linear::matmul(Workers& pool, const float* xr, int64_t m, float* y, int64_t ldy, const float* residual,
                        int64_t ldr) const {
  if (m <= 0) return;
  jit::MatmulOperands op;
  op.w = &w_;
  op.x = xr;
  op.ldx = row_bytes();
  op.y = y;
  op.ldy = ldy * 4;
  op.r = bias_.data();  // one row for every output row: y = W x + b
  op.ldr = 0;
  // Rows in chunks of 64, columns in whole register blocks, about four tiles per worker.
  const int64_t m_chunk = std::min<int64_t>(m, 64), m_tiles = (m + m_chunk - 1) / m_chunk;
  const int64_t align = int64_t(w_.panel) * kernel_->spec().nr;
  const int64_t units = (n_ + align - 1) / align;
  const int64_t want = std::max<int64_t>(1, 4 * int64_t(pool.size()) / m_tiles);
  const int64_t n_chunk = std::max<int64_t>(1, (units + want - 1) / want) * align, n_tiles = (n_ + n_chunk - 1) / n_chunk;
  pool.run(size_t(m_tiles * n_tiles), [&](size_t task, int) {
    const int64_t mt = int64_t(task) / n_tiles, nt = int64_t(task) % n_tiles;
    const jit::Tile t{mt * m_chunk, std::min(m, (mt + 1) * m_chunk), nt * n_chunk, std::min(n_, (nt + 1) * n_chunk)};
    jit::run_tile(*kernel_, op, t);
    if (residual)
      for (int64_t i = t.m_begin; i < t.m_end; ++i) {
        float* yr = y + i * ldy;
        const float* rr = residual + i * ldr;
        for (int64_t c = t.n_begin; c < t.n_end; ++c) yr[c] += rr[c];
      }
  });
}

}  // namespace ckjit::vision
