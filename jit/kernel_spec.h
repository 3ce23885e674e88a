#pragma once
// A JIT kernel described as plain data. The spec is the code-cache key and the only input of an
// emitter; a planner chooses the block shapes, the emitter never does.
#include <cstdint>
#include <string>

#include "runtime/tensor_type.h"

namespace ckjit::jit {

// Dense: float weights (F16, BF16, F32) times F32 activation rows, one micro-tile of mr rows x nr
// panels over kc elements of K per call (the vision tower's matmuls; jit/dense_emitter.cpp); on
// AMX, BF16 weights times BF16 rows in 32 x 32 blocks (jit/amx_bf16_emitter.cpp).
enum class Op { Quantize, Gemm, Gemv, SwiGLU, Dense };
// Avx2: ymm, vpmaddubsw + vpmaddwd. AvxVnni: the same ymm kernels with vpdpbusd / vpdpwssd (16 ymm
// registers). Avx512: zmm + AVX512-VNNI. Amx: AMX-INT8 tiles.
enum class IsaPath { Avx2, Avx512, Amx, AvxVnni };
// Encoding of the AvxVnni dot instructions. Vex is the real path (AVX-VNNI CPUs without AVX-512);
// Evex is the same ymm instruction in EVEX form, a test vehicle for CPUs with AVX512-VNNI + VL but
// no AVX-VNNI (e.g. Zen 4). Same results; only which CPUs can execute it differs (isa_runs).
enum class VnniEncoding { Vex, Evex };
// What the kernel does with each finished output tile.
enum class Epilogue {
  Store,        // y = W x
  ResidualAdd,  // y = W x + r  (r read with the same strides as y)
  SwiGLU,       // y = silu(Wg x) * (Wu x)   (op SwiGLU only)
  Bias,         // y = W x + b             (op Dense: b from GemmArgs::w2, one float per column)
  BiasResidual, // y = (W x + b) + r       (op Dense)
};

struct KernelSpec {
  Op op = Op::Gemm;
  TensorType wtype = TensorType::Q4_K;  // weight type (Quantize: the source type, F32)
  TensorType atype = TensorType::Q8_K;  // activation type (Quantize: the produced type)
  IsaPath isa = IsaPath::Avx512;
  int mr = 4;       // register block: activation rows per micro-tile
  int nr = 3;       // register block: weight column panels per micro-tile (panel = 16 columns zmm, 8 ymm)
  int kc = 0;       // cache block along K in super-blocks (0 = whole K)
  int nc = 0;       // cache block along N in panels a caller should hand to one call (planner hint)
  int pf = 0;       // software prefetch distance in weight blocks (0 = none; helps DRAM-bound GEMV)
  int64_t k = 0;    // reduction length (elements); fixed at emit time
  int64_t m_min = 1, m_max = 0;  // row range the spec is meant for (m_max 0 = unbounded)
  Epilogue epilogue = Epilogue::Store;
  VnniEncoding enc = VnniEncoding::Vex;  // isa=avxvnni only (printed as enc=vex|evex for it)
  // op=dense only (printed as acc=0|1 for it): start from the partial sums already in y (a later
  // kc block of K) instead of zero. kc is then in elements and k is the whole K (the panel stride).
  bool accumulate = false;

  // "op=gemm,w=q4_K,a=q8_K,isa=avx512,mr=4,nr=3,kc=0,nc=0,pf=0,k=4096,m=2-0,ep=store"
  // (isa=avxvnni specs end with ",enc=vex" or ",enc=evex")
  std::string to_string() const;
  // Parses to_string()'s form; keys may come in any order and may be omitted (defaults above).
  // Throws ckjit::Error on unknown keys or values and on inconsistent specs (see validate()).
  static KernelSpec parse(const std::string& text);
  // Throws ckjit::Error when the spec cannot be emitted (bad block sizes, K not a multiple of
  // the block size, unsupported type pair).
  void validate() const;

  bool operator==(const KernelSpec&) const = default;
};

const char* op_name(Op op);
const char* isa_name(IsaPath isa);
const char* epilogue_name(Epilogue e);
const char* encoding_name(VnniEncoding e);
// Paths whose kernels use the 16 ymm registers (8-row panels, AVX2 frame).
inline bool is_ymm_path(IsaPath isa) { return isa == IsaPath::Avx2 || isa == IsaPath::AvxVnni; }
// Columns in one weight panel for an ISA path (one accumulator register wide).
inline int panel_cols(IsaPath isa) { return is_ymm_path(isa) ? 8 : 16; }

// AMX kernels work on 16-row tiles: an op planned for fewer rows (decode, a short prefill chunk)
// runs the AVX-512 kernels of the same panels instead (the planner and Linear both ask this).
inline constexpr int kAmxTileRows = 16;
inline bool amx_serves_rows(int64_t m) { return m >= kAmxTileRows; }

// The register-block rule of the vector matmul emitters, in one place (the emitters, validate()
// and the planner's candidate generator all ask it): an mr x nr block (nr = weight streams; SwiGLU
// streams come in gate/up pairs) keeps 2 accumulators per (row, stream) plus one register per
// stream, so AVX-512 needs 2*mr*nr + nr <= 27 of its 32 zmm and AVX2 2*mr*nr + nr <= 13 of its 16
// ymm (the rest hold masks, scales and the broadcast); AVX-VNNI keeps one accumulator per (row,
// stream): mr*nr + nr <= 13. mr <= 6 (the frames' stack layout) and nr <= 4. Returns "" when the
// block fits, else why not. AMX tiles have their own rule (mr = 16).
std::string register_block_problem(IsaPath isa, Op op, int mr, int nr);
// The same for op=dense: one accumulator per (row, panel), one register per panel, one broadcast:
// mr*nr + nr + 1 <= 16 ymm. On AMX (bf16) the block is fixed: 2 x 2 tiles of 16 x 16 floats.
inline constexpr int kAmxDenseRows = 32, kAmxDensePanels = 2, kAmxDenseK = 32;
std::string dense_block_problem(IsaPath isa, int mr, int nr);

}  // namespace ckjit::jit
