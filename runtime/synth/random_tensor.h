#pragma once
// Seeded random tensor data in any GGUF weight type. Quantized types are generated directly as
// blocks (random quants with scales chosen so the dequantized values have the requested spread)
// instead of quantizing floats: the reference K-quant search is far too slow for 8B parameters.
// Every row has its own random stream derived from (seed, tensor name, row), so the bytes do not
// depend on how rows are split among threads.
#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/tensor_type.h"

namespace ckjit::synth {

// Dequantized values are uniformly distributed with this mean and standard deviation. Quantized
// types are symmetric around zero: they need mean == 0.
struct WeightInit {
  float mean = 0.0f;
  float std = 0.0f;
};

// Key of a tensor's random streams.
uint64_t tensor_key(uint64_t seed, std::string_view tensor_name);

// Types fill_rows can produce: F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K.
bool can_generate(TensorType type);

// Writes rows [row_begin, row_end) (each of ne0 elements, ne0 a multiple of the block size) to dst,
// which points at row row_begin. Throws ckjit::Error for an unsupported type or a nonzero mean
// with a quantized type.
void fill_rows(TensorType type, int64_t ne0, uint64_t key, int64_t row_begin, int64_t row_end, const WeightInit& init,
               uint8_t* dst);

// A uniformly random cyclic permutation of 0..n-1 from the stream `key` (Sattolo's algorithm):
// following it from any id visits all n ids before it comes back.
std::vector<int32_t> random_cycle(int64_t n, uint64_t key);

// Rows of a tensor made from another random tensor's rows: row r of dst (type dst_type) is
// scale * row src_rows[r] of what fill_rows(src_type, ne0, src_key, ..., src_init) writes,
// dequantized and requantized with llama.cpp's reference quantizer (quant::quantize_row). Rows
// stay independent, so any split among threads gives the same bytes.
void fill_rows_copied(TensorType dst_type, TensorType src_type, int64_t ne0, uint64_t src_key, const WeightInit& src_init,
                      const int32_t* src_rows, float scale, int64_t row_begin, int64_t row_end, uint8_t* dst);

}  // namespace ckjit::synth
