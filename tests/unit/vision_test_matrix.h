#pragma once
// A random [k, n] vision matrix of any GGUF type with its F32 bias, as the tower's matmul
// constructors take them (gguf::TensorInfo over bytes the test owns), and random rows.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/gguf/gguf_reader.h"
#include "runtime/quants/quants.h"
#include "topology/workers.h"

namespace ckjit::test {

inline std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

struct VisionMatrix {
  std::vector<uint8_t> bytes;
  std::vector<float> bias;
  gguf::TensorInfo w, b;
  VisionMatrix(TensorType type, int64_t n, int64_t k, uint32_t seed) {
    const auto wf = randn(size_t(n * k), seed, 0.05f);
    bias = randn(size_t(n), seed + 1);
    const TensorTypeInfo& ti = tensor_type_info(type);
    const int64_t row = k / ti.block_elems * ti.block_bytes;
    bytes.resize(size_t(n * row));
    for (int64_t r = 0; r < n; ++r) quant::quantize_row(type, wf.data() + r * k, bytes.data() + r * row, k);
    w.name = "v.test.weight", w.type = ti, w.n_dims = 2, w.ne = {k, n, 1, 1}, w.n_elements = n * k;
    w.n_bytes = bytes.size(), w.data = bytes.data();
    b.name = "v.test.bias", b.type = tensor_type_info(TensorType::F32), b.n_dims = 1, b.ne = {n, 1, 1, 1};
    b.n_elements = n, b.n_bytes = uint64_t(n * 4), b.data = reinterpret_cast<const uint8_t*>(bias.data());
  }
  // Row r of the weights as f32 (the file's values).
  std::vector<float> row_f32(int64_t r) const {
    std::vector<float> f(static_cast<size_t>(w.ne[0]));
    quant::dequantize_row(w.type.type, w.data + r * int64_t(w.row_bytes()), f.data(), w.ne[0]);
    return f;
  }
};

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// y of a vision matmul (DenseLinear, Int8Linear, AmxBf16Linear) over m rows of x (+ r), through
// prepare() and matmul() on `threads` workers.
template <class Linear>
std::vector<float> run_linear(const Linear& lin, const std::vector<float>& x, const std::vector<float>* r, int64_t m, int threads) {
  const int64_t n = lin.n(), k = lin.k();
  Workers pool(threads);
  std::vector<float> xr(size_t(m * k)), y(size_t(m * n), -1.0f);
  lin.prepare(pool, x.data(), k, m, xr.data());
  lin.matmul(pool, xr.data(), m, y.data(), n, r ? r->data() : nullptr, n);
  return y;
}

}  // namespace ckjit::test
