#pragma once
// The plain description of one matrix op the planner plans and the tuner measures, and the
// tiling chosen for it. Shared by the planner (jit/planner), the profile store and the graph.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor_type.h"

namespace ckjit {

// y[M x N] = x[M x K] · W[N x K]^T, W in `wtype`. gate_up_swiglu: two weights (gate, up) of N x K
// each and y = silu(x·Wg^T) * (x·Wu^T); gemv is the M = 1 (decode) case of gemm.
enum class OpKind { gemm, gemv, gate_up_swiglu };

struct OpShape {
  OpKind kind = OpKind::gemm;
  TensorType wtype = TensorType::Q4_K;
  int64_t m = 1, n = 1, k = 1;

  int weight_matrices() const { return kind == OpKind::gate_up_swiglu ? 2 : 1; }
  double macs() const { return double(m) * double(n) * double(k) * weight_matrices(); }
  std::string key() const;  // "gate_up_swiglu:Q4_K:1028x12288x4096", the profile key
  bool operator==(const OpShape&) const = default;
};

std::string op_kind_name(OpKind k);
// "gemm", "matmul", "gemv", "gate_up", "gate_up_swiglu", "ffn_gate_up"; throws ckjit::Error otherwise.
OpKind parse_op_kind(const std::string& s);
// Case-insensitive type name ("q4_k", "F32"); throws ckjit::Error for unknown names.
TensorType parse_tensor_type(const std::string& s);
// Checks the shape (positive dims, K a multiple of the weight block, gemv has M = 1);
// throws ckjit::Error with the reason.
void validate(const OpShape& s);
// "gate_up:1028x12288x4096[:q4_k]" (the `--shape` syntax of `ckjit tune`); throws ckjit::Error.
OpShape parse_op_shape(const std::string& text, TensorType default_wtype);

// Loop nest, outermost first. n_k_m: weight block resident while all rows of x stream past it
// (weights read once from DRAM); m_n_k: rows outer (activation block resident, weights re-read).
enum class LoopOrder { n_k_m, m_n_k };
// Which output axis the threads split.
enum class SplitAxis { n, m };

std::string loop_order_name(LoopOrder o);   // "N>K>M"
std::string split_axis_name(SplitAxis a);   // "N"
LoopOrder parse_loop_order(const std::string& s);
SplitAxis parse_split_axis(const std::string& s);

// Everything a kernel needs to know about how to cut the work: the JIT spec takes mr/nr and
// mc/nc/kc, the executor takes threads, split and the order.
struct Tiling {
  int threads = 1;
  bool smt = false;        // workers may share a physical core
  int mr = 1, nr = 16;     // register block: rows of x x output columns (nr = vectors x lanes)
  int64_t mc = 1, nc = 16, kc = 256;  // cache blocks
  LoopOrder order = LoopOrder::n_k_m;
  SplitAxis split = SplitAxis::n;

  std::string describe() const;  // "2 thr, reg 4x64, mc 64 nc 512 kc 1024, N>K>M, split N"
  bool operator==(const Tiling&) const = default;
};

}  // namespace ckjit
