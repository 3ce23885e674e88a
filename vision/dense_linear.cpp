#include "vision/dense_linear.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "jit/executor.h"
#include "jit/hand_kernels.h"
#include "jit/isa_select.h"
#include "jit/kernels.h"
#include "jit/reference.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"
#include "vision/dense_linear_kernels.h"
#include "vision/vision_ops.h"

namespace ckjit::vision {
namespace {

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// K per kernel call: all of K when its rows and a weight group stay in L2, else the largest
// divisor of K in [256, 1024] (the chain continues exactly across blocks), else all of K.
int64_t choose_kc(int64_t k) {
  if (k <= 1024) return k;
  for (int64_t kc = 1024; kc >= 256; --kc)
    if (k % kc == 0) return kc;
  return k;
}

void round_bf16(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = quant::bf16_to_f32(quant::f32_to_bf16(x[i]));
}

// The copies of the repack, in jit::hand_copies' order (HandOp::dense_panels); jit::hand_isa picks.
using PackPanel = void (*)(const uint8_t* src, int es, int64_t n, int64_t k, int P, int64_t p, uint8_t* dst);
constexpr jit::HandCopy<PackPanel> kPackPanel[] = {
    {jit::HandIsa::avx2, kernels::pack_panel_avx2},
    {jit::HandIsa::portable, kernels::pack_panel_portable},
};
static_assert(jit::lists_the_copies(kPackPanel, jit::HandOp::dense_panels));

}  // namespace

// The portable twin of the repack: element by element, the same bytes as the AVX2 copy's
// transposes.
void kernels::pack_panel_portable(const uint8_t* src, int es, int64_t n, int64_t k, int P, int64_t p, uint8_t* dst) {
  const int rows = int(std::min<int64_t>(P, n - p * P));
  if (rows < P) std::memset(dst, 0, size_t(k * P * es));
  for (int l = 0; l < rows; ++l) {
    const uint8_t* row = src + (p * P + l) * k * es;
    for (int64_t kk = 0; kk < k; ++kk) std::memcpy(dst + (kk * P + l) * es, row + kk * es, size_t(es));
  }
}

DenseLinear::DenseLinear(const gguf::TensorInfo& w, const gguf::TensorInfo& bias, const topo::Isa& isa, int threads)
    : name_(w.name), n_(w.ne[1]), k_(w.ne[0]), file_type_(w.type.type) {
  if (w.ne[2] != 1 || w.ne[3] != 1 || n_ < 1 || k_ < 1) throw Error(name_ + ": not a matrix (" + w.shape_string() + ")");
  if (bias.type.type != TensorType::F32 || bias.n_elements != n_) throw Error(std::string(bias.name) + ": bias must be F32 [" + std::to_string(n_) + "]");
  choose_path(isa);
  switch (file_type_) {
    case TensorType::F16: wtype_ = round_ = TensorType::F16; break;
    case TensorType::BF16: wtype_ = round_ = TensorType::BF16; break;
    case TensorType::F32: case TensorType::Q8_0: wtype_ = round_ = TensorType::F32; break;
    default: throw Error(name_ + ": type " + std::string(w.type.name) + " has no vision kernel (F16, BF16, F32, Q8_0)");
  }
  bias_.assign(size_t(round_up(n_, panel_)), 0.0f);
  std::memcpy(bias_.data(), bias.data, size_t(n_) * 4);
  if (file_type_ == TensorType::Q8_0 || file_type_ == TensorType::F32) {
    std::vector<float> rows(size_t(n_ * k_));
    for (int64_t r = 0; r < n_; ++r) quant::dequantize_row(file_type_, w.data + r * w.row_bytes(), rows.data() + r * k_, k_);
    pack(rows.data(), nullptr, threads);
  } else {
    pack(nullptr, reinterpret_cast<const uint16_t*>(w.data), threads);
  }
  build_kernels();
  build_op_descs();
}

DenseLinear::DenseLinear(const std::vector<float>& w, int64_t n, int64_t k, std::vector<float> bias, TensorType round_input,
                         const topo::Isa& isa, int threads, TensorType packed)
    : name_("patch_embd"), n_(n), k_(k), wtype_(packed), round_(round_input), file_type_(packed) {
  if (int64_t(w.size()) != n * k || int64_t(bias.size()) != n) throw Error("DenseLinear: weight/bias sizes do not match n x k");
  if (packed != TensorType::F32 && packed != TensorType::F16 && packed != TensorType::BF16)
    throw Error("DenseLinear: packed type must be F32, F16 or BF16");
  choose_path(isa);
  bias_ = std::move(bias);
  bias_.resize(size_t(round_up(n_, panel_)), 0.0f);
  if (packed == TensorType::F32) {
    pack(w.data(), nullptr, threads);
  } else {
    std::vector<uint16_t> h(w.size());
    for (size_t i = 0; i < w.size(); ++i) h[i] = packed == TensorType::F16 ? quant::f32_to_f16(w[i]) : quant::f32_to_bf16(w[i]);
    pack(nullptr, h.data(), threads);
  }
  build_kernels();
  build_op_descs();
}

void DenseLinear::choose_path(const topo::Isa& isa) {
  path_ = jit::widest_dense_path(isa);
  round_f16_ = round_f16_for(isa);
  const auto& repack = jit::pick(kPackPanel, jit::HandOp::dense_panels, isa);
  pack_panel_ = repack.fns;
  repack_impl_ = jit::hand_isa_name(repack.isa);
  panel_ = jit::panel_cols(path_);
  const jit::DenseBlock block = jit::dense_block(path_);
  mr_ = block.mr;
  nr_ = block.nr;
  row_tile_ = (64 + mr_ - 1) / mr_ * mr_;
}

void DenseLinear::pack(const float* rows_f32, const uint16_t* rows_16, int threads) {
  const int es = wtype_ == TensorType::F32 ? 4 : 2;
  const int P = panel_;
  w_.type = wtype_, w_.n = n_, w_.k = k_, w_.panel = P;
  w_.n_panels = round_up(n_, P) / P;
  w_.block_bytes = P * es;
  w_.panel_stride = k_ * P * es;
  w_.data = jit::alloc_packed(size_t(w_.bytes()), name_.c_str());
  const uint8_t* src = rows_f32 ? reinterpret_cast<const uint8_t*>(rows_f32) : reinterpret_cast<const uint8_t*>(rows_16);
  jit::for_each_panel(w_, std::max(1, threads),
                      [&](int64_t p) { pack_panel_(src, es, n_, k_, P, p, w_.data.get() + p * w_.panel_stride); });
}

// Every layer of a tower has the same few shapes: each (packed type, kc, k) gets its table once
// (72 code-cache lookups per matrix were ~15 ms of the 2B mmproj load).
void DenseLinear::build_kernels() {
  kc_ = choose_kc(k_);
  static std::mutex mu;
  static std::map<std::tuple<jit::IsaPath, TensorType, int64_t, int64_t>, std::vector<jit::GemmFn>> tables;
  std::lock_guard<std::mutex> lock(mu);
  std::vector<jit::GemmFn>& t = tables[{path_, wtype_, kc_, k_}];
  if (t.empty()) t = make_table(path_, wtype_, kc_, k_);
  fns_ = t;
}

std::vector<jit::GemmFn> DenseLinear::make_table(jit::IsaPath path, TensorType wtype, int64_t kc, int64_t k) {
  const jit::DenseBlock block = jit::dense_block(path);
  std::vector<jit::GemmFn> fns(size_t(kMaxMr * kMaxNr * 2 * 3), nullptr);
  for (int mr = 1; mr <= block.mr; ++mr)
    for (int nr = 1; nr <= block.nr; ++nr)
      for (int acc = 0; acc < 2; ++acc)
        for (jit::Epilogue ep : {jit::Epilogue::Store, jit::Epilogue::Bias, jit::Epilogue::BiasResidual})
          fns[table_index(mr, nr, acc != 0, ep)] = jit::dense_kernel(path, wtype, mr, nr, kc, k, acc != 0, ep);
  return fns;
}

std::string DenseLinear::describe() const {
  const char* t = file_type_ == TensorType::F16 ? "F16" : file_type_ == TensorType::BF16 ? "BF16" : file_type_ == TensorType::Q8_0 ? "Q8_0" : "F32";
  const char* packed = wtype_ == TensorType::F16 ? "f16" : wtype_ == TensorType::BF16 ? "bf16" : "f32";
  const char* in = round_ == TensorType::F16 ? "f16" : round_ == TensorType::BF16 ? "bf16" : "f32";
  return name_ + " " + t + " [" + std::to_string(k_) + " x " + std::to_string(n_) + "] -> dense " + jit::isa_name(path_) + " " + packed +
         " panels, input " + in + ", mr=" + std::to_string(mr_) + " nr=" + std::to_string(nr_) + " kc=" + std::to_string(kc_);
}

void DenseLinear::build_op_descs() {
  auto lower = [](TensorType t) { return t == TensorType::F16 ? "f16" : t == TensorType::BF16 ? "bf16" : "f32"; };
  const std::string kernel = std::string("jit dense ") + jit::isa_name(path_) + " " + lower(wtype_) +
                             " panels mr=" + std::to_string(mr_) + " nr=" + std::to_string(nr_) + " kc=" + std::to_string(kc_) +
                             " (f32 FMA)";
  desc_ = OpDesc{n_, k_, tensor_type_info(file_type_).name, lower(round_), kernel, kernel};
  const std::string round = round_ == TensorType::F16 ? "round rows to f16" : round_ == TensorType::BF16 ? "round rows to bf16" : "copy rows";
  prepare_desc_ = OpDesc{0, k_, "", std::string("f32 -> ") + lower(round_), round, round};
}

void DenseLinear::prepare(Workers& pool, const float* x, int64_t ldx, int64_t m, float* xr) const {
  for_rows(pool, m, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const float* src = x + i * ldx;
      float* dst = xr + i * k_;
      if (round_ == TensorType::F16) round_f16_(src, dst, k_);
      else if (round_ == TensorType::BF16) round_bf16(src, dst, k_);
      else std::memcpy(dst, src, size_t(k_) * 4);
    }
  });
}

void DenseLinear::run_tile(int64_t r0, int64_t r1, int64_t g0, int64_t g1, const float* xr, float* y, int64_t ldy,
                           const float* res, int64_t ldr) const {
  constexpr int kTailLd = kMaxNr * 16;
  alignas(64) float tail[kMaxRowTile * kTailLd];
  const int es = wtype_ == TensorType::F32 ? 4 : 2;
  const jit::Epilogue final_ep = res ? jit::Epilogue::BiasResidual : jit::Epilogue::Bias;
  const int64_t n_blocks = k_ / kc_;
  for (int64_t kb = 0; kb < n_blocks; ++kb) {
    const bool last = kb + 1 == n_blocks;
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t p0 = g * nr_;
      const int nr = int(std::min<int64_t>(nr_, w_.n_panels - p0));
      const int64_t c0 = p0 * panel_;
      // The group holding a partial last panel runs into a local tile (its 8-wide stores would
      // pass the row's end); its residual is added when the valid columns are copied out.
      const bool partial = c0 + nr * panel_ > n_;
      jit::GemmArgs a;
      a.w = w_.panel_ptr(p0) + kb * kc_ * panel_ * es;
      a.w2 = reinterpret_cast<const uint8_t*>(bias_.data() + c0);
      for (int64_t i = r0; i < r1; i += mr_) {
        const int mr = int(std::min<int64_t>(mr_, r1 - i));
        a.x = xr + i * k_ + kb * kc_;
        a.ldx = k_ * 4;
        if (partial) a.y = tail + (i - r0) * kTailLd, a.ldy = kTailLd * 4;
        else a.y = y + i * ldy + c0, a.ldy = ldy * 4;
        const jit::Epilogue ep = !last ? jit::Epilogue::Store : partial ? jit::Epilogue::Bias : final_ep;
        if (ep == jit::Epilogue::BiasResidual) a.r = res + i * ldr + c0, a.ldr = ldr * 4;
        if (jit::scalar_twins()) jit::reference_dense(jit::dense_spec(path_, wtype_, mr, nr, kc_, k_, kb > 0, ep), &a);
        else kernel(mr, nr, kb > 0, ep)(&a);
      }
      if (partial && last)
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t c = c0; c < n_; ++c) {
            const float v = tail[(i - r0) * kTailLd + (c - c0)];
            y[i * ldy + c] = res ? v + res[i * ldr + c] : v;
          }
    }
  }
}

void DenseLinear::matmul(Workers& pool, const float* xr, int64_t m, float* y, int64_t ldy, const float* residual,
                         int64_t ldr) const {
  if (m <= 0) return;
  const int64_t n_groups = (w_.n_panels + nr_ - 1) / nr_;
  const int64_t n_rt = (m + row_tile_ - 1) / row_tile_;
  // Enough column chunks that every worker has several tasks even for one row tile.
  const int64_t want = std::max<int64_t>(1, int64_t(pool.size()) * 4 / n_rt);
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(8, (n_groups + want - 1) / want));
  const int64_t n_ct = (n_groups + chunk - 1) / chunk;
  pool.run(size_t(n_rt * n_ct), [&](size_t t, int) {
    const int64_t rt = int64_t(t) / n_ct, ct = int64_t(t) % n_ct;
    run_tile(rt * row_tile_, std::min(m, (rt + 1) * row_tile_), ct * chunk, std::min(n_groups, (ct + 1) * chunk), xr, y, ldy,
             residual, ldr);
  });
}

}  // namespace ckjit::vision
