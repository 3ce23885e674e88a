#include "jit/weight_kernels.h"

#include <iterator>

#include "jit/reference.h"
#include "runtime/quants/quants.h"

namespace ckjit::jit {

namespace {

template <class Layout>
int64_t block_bytes_of(int panel) { return Layout{panel}.bytes(); }

// The typed repacks seen through the table's untyped signature (simd walk where the CPU has it).
template <class Block, PackedWeights (*F)(const Block*, int64_t, int64_t, int, int, bool)>
PackedWeights repack_as(const void* blocks, int64_t n, int64_t k, int panel, int threads) {
  return F(static_cast<const Block*>(blocks), n, k, panel, threads, true);
}
template <class Block, PackedWeights (*F)(const Block*, int64_t, int64_t, int, int)>
PackedWeights repack_as(const void* blocks, int64_t n, int64_t k, int panel, int threads) {
  return F(static_cast<const Block*>(blocks), n, k, panel, threads);
}

constexpr WeightKernels kRows[] = {
    {TensorType::Q4_K, TensorType::Q8_K, quant::QK_K, block_bytes_of<Q4KPanelLayout>,
     repack_as<quant::BlockQ4_K, repack_q4_K>, ref_dot_q4k},
    {TensorType::Q5_K, TensorType::Q8_K, quant::QK_K, block_bytes_of<Q5KPanelLayout>,
     repack_as<quant::BlockQ5_K, repack_q5_K>, ref_dot_q5k},
    {TensorType::Q6_K, TensorType::Q8_K, quant::QK_K, block_bytes_of<Q6KPanelLayout>,
     repack_as<quant::BlockQ6_K, repack_q6_K>, ref_dot_q6k},
    {TensorType::Q8_0, TensorType::Q8_0, quant::QK8_0, block_bytes_of<Q80PanelLayout>,
     repack_as<quant::BlockQ8_0, repack_q8_0>, ref_dot_q80},
};

constexpr bool rows_follow_the_type_list() {
  if (std::size(kRows) != std::size(kJitWeightTypes)) return false;
  for (size_t i = 0; i < std::size(kRows); ++i)
    if (kRows[i].wtype != kJitWeightTypes[i]) return false;
  return true;
}
static_assert(rows_follow_the_type_list(), "one row per entry of kJitWeightTypes, in its order");

}  // namespace

const WeightKernels* weight_kernels(TensorType w) {
  for (const WeightKernels& row : kRows)
    if (row.wtype == w) return &row;
  return nullptr;
}

}  // namespace ckjit::jit
