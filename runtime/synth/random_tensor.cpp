#include "runtime/synth/random_tensor.h"

#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "runtime/error.h"
#include "runtime/quants/quants.h"

namespace ckjit::synth {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// wyrand: small state, fast, good enough statistics for random weights.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(splitmix64(seed)) {}
  uint64_t next() {
    state_ += 0xa0761d6478bd642full;
    __uint128_t m = __uint128_t(state_) * (state_ ^ 0xe7037ed1a0b428dbull);
    return uint64_t(m >> 64) ^ uint64_t(m);
  }
  void fill(uint8_t* dst, size_t n) {
    for (; n >= 8; n -= 8, dst += 8) {
      uint64_t r = next();
      std::memcpy(dst, &r, 8);
    }
    if (n > 0) {
      uint64_t r = next();
      std::memcpy(dst, &r, n);
    }
  }
  // Uniform in [-1, 1) with 24 bits (exact in float).
  float symmetric() { return float(int32_t(next() >> 40) - (1 << 23)) * (1.0f / float(1 << 23)); }

 private:
  uint64_t state_;
};

// Standard deviations of the uniform integer quants each generator draws.
constexpr float kSigma0to15 = 4.6097722f;    // sqrt((16^2 - 1) / 12)
constexpr float kSigma0to31 = 9.2330927f;    // sqrt((32^2 - 1) / 12)
constexpr float kSigmaPm31 = 18.184242f;     // sqrt((63^2 - 1) / 12), values -31..31
constexpr float kSigmaPm127 = 73.612045f;    // sqrt((255^2 - 1) / 12), values -127..127
constexpr float kSqrt3 = 1.7320508f;         // uniform on [-a, a] has std a / sqrt(3)

// Q4_K/Q5_K: a power-of-two super-scale d makes the min scale (center * d) exact in f16, so with
// mn = sc every sub-block dequantizes to d*sc*(q - center): zero mean. sc lands in [32, 63].
struct KScale {
  float d = 0;
  int sc = 0;
};
KScale k_scale(float step) {
  if (!(step > 0)) return {0.0f, 0};
  int e = 0;
  std::frexp(step, &e);  // step = m * 2^e, m in [0.5, 1)
  float d = std::ldexp(1.0f, e - 6);
  int sc = int(std::lround(step / d));
  return {d, sc > 63 ? 63 : sc};
}

// Per sub-block scales vary a little (down to 7/8 of the target) so decoders see distinct values.
void k_sub_scales(Rng& rng, int sc_target, uint8_t sc[8]) {
  uint64_t r = rng.next();
  for (int j = 0; j < 8; ++j, r >>= 8) sc[j] = uint8_t(sc_target - int((r & 0xff) % uint64_t(sc_target / 8 + 1)));
}

// The 12-byte packing of quants.md §4.2.
void pack_k4_scales(const uint8_t sc[8], const uint8_t mn[8], uint8_t s[12]) {
  for (int j = 0; j < 4; ++j) {
    s[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = uint8_t((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = uint8_t((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
}

void fill_q4_k(Rng& rng, const WeightInit& init, int64_t nblocks, quant::BlockQ4_K* out) {
  KScale ks = k_scale(init.std / kSigma0to15);
  const uint16_t d = quant::f32_to_f16(ks.d), dmin = quant::f32_to_f16(7.5f * ks.d);
  for (int64_t b = 0; b < nblocks; ++b) {
    quant::BlockQ4_K& blk = out[b];
    uint8_t sc[8];
    k_sub_scales(rng, ks.sc, sc);
    blk.d = d;
    blk.dmin = dmin;
    pack_k4_scales(sc, sc, blk.scales);
    rng.fill(blk.qs, sizeof blk.qs);
  }
}

void fill_q5_k(Rng& rng, const WeightInit& init, int64_t nblocks, quant::BlockQ5_K* out) {
  KScale ks = k_scale(init.std / kSigma0to31);
  const uint16_t d = quant::f32_to_f16(ks.d), dmin = quant::f32_to_f16(15.5f * ks.d);
  for (int64_t b = 0; b < nblocks; ++b) {
    quant::BlockQ5_K& blk = out[b];
    uint8_t sc[8];
    k_sub_scales(rng, ks.sc, sc);
    blk.d = d;
    blk.dmin = dmin;
    pack_k4_scales(sc, sc, blk.scales);
    rng.fill(blk.qh, sizeof blk.qh);
    rng.fill(blk.qs, sizeof blk.qs);
  }
}

// Q6_K: quants u in 1..63 (q = u - 32 in -31..31, symmetric), sub-block scales of random sign.
void fill_q6_k(Rng& rng, const WeightInit& init, int64_t nblocks, quant::BlockQ6_K* out) {
  constexpr int kScaleTarget = 112;
  const uint16_t d = quant::f32_to_f16(init.std / kSigmaPm31 / float(kScaleTarget));
  for (int64_t b = 0; b < nblocks; ++b) {
    quant::BlockQ6_K& blk = out[b];
    uint8_t u[256];
    rng.fill(u, sizeof u);
    for (uint8_t& x : u) x = uint8_t(1 + ((unsigned(x) * 63u) >> 8));
    for (int h = 0; h < 2; ++h) {
      const uint8_t* e = u + 128 * h;  // element 128h + 32k + l is e[32k + l]
      for (int l = 0; l < 32; ++l) {
        blk.ql[64 * h + l] = uint8_t((e[l] & 15) | ((e[64 + l] & 15) << 4));
        blk.ql[64 * h + 32 + l] = uint8_t((e[32 + l] & 15) | ((e[96 + l] & 15) << 4));
        blk.qh[32 * h + l] = uint8_t((e[l] >> 4) | ((e[32 + l] >> 4) << 2) | ((e[64 + l] >> 4) << 4) | ((e[96 + l] >> 4) << 6));
      }
    }
    uint64_t r[2] = {rng.next(), rng.next()};
    for (int i = 0; i < 16; ++i) {
      unsigned byte = unsigned(r[i / 8] >> (8 * (i % 8))) & 0xff;
      int mag = kScaleTarget - int((byte & 0x7f) % 15u);
      blk.scales[i] = int8_t((byte & 0x80) ? -mag : mag);
    }
    blk.d = d;
  }
}

void fill_q8_0(Rng& rng, const WeightInit& init, int64_t nblocks, quant::BlockQ8_0* out) {
  const uint16_t d = quant::f32_to_f16(init.std / kSigmaPm127);
  for (int64_t b = 0; b < nblocks; ++b) {
    uint8_t raw[32];
    rng.fill(raw, sizeof raw);
    out[b].d = d;
    for (int i = 0; i < 32; ++i) out[b].qs[i] = int8_t(int((unsigned(raw[i]) * 255u) >> 8) - 127);
  }
}

template <class Store>
void fill_floats(Rng& rng, const WeightInit& init, int64_t n, Store store) {
  const float a = init.std * kSqrt3;
  for (int64_t i = 0; i < n; ++i) store(i, init.mean + a * rng.symmetric());
}

}  // namespace

uint64_t tensor_key(uint64_t seed, std::string_view tensor_name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the name, then mixed with the seed
  for (unsigned char c : tensor_name) h = (h ^ c) * 0x100000001b3ull;
  return splitmix64(splitmix64(seed) ^ h);
}

bool can_generate(TensorType type) {
  switch (type) {
    case TensorType::F32: case TensorType::F16: case TensorType::BF16: case TensorType::Q8_0:
    case TensorType::Q4_K: case TensorType::Q5_K: case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

void fill_rows(TensorType type, int64_t ne0, uint64_t key, int64_t row_begin, int64_t row_end, const WeightInit& init,
               uint8_t* dst) {
  const TensorTypeInfo& info = tensor_type_info(type);
  if (!can_generate(type)) throw Error(std::string("random weights: cannot generate type ") + info.name);
  if (ne0 <= 0 || ne0 % info.block_elems != 0) {
    throw Error("random weights: row length " + std::to_string(ne0) + " is not a multiple of the " + info.name + " block");
  }
  const bool quantized = type != TensorType::F32 && type != TensorType::F16 && type != TensorType::BF16;
  if (quantized && init.mean != 0.0f) throw Error(std::string("random weights: ") + info.name + " values must have mean 0");
  const int64_t nblocks = ne0 / info.block_elems;
  const int64_t rbytes = row_bytes(info, ne0);
  for (int64_t row = row_begin; row < row_end; ++row, dst += rbytes) {
    Rng rng(key ^ splitmix64(uint64_t(row)));
    switch (type) {
      case TensorType::F32:
        fill_floats(rng, init, ne0, [&](int64_t i, float v) { std::memcpy(dst + 4 * i, &v, 4); });
        break;
      case TensorType::F16:
        fill_floats(rng, init, ne0, [&](int64_t i, float v) {
          uint16_t h = quant::f32_to_f16(v);
          std::memcpy(dst + 2 * i, &h, 2);
        });
        break;
      case TensorType::BF16:
        fill_floats(rng, init, ne0, [&](int64_t i, float v) {
          uint16_t h = quant::f32_to_bf16(v);
          std::memcpy(dst + 2 * i, &h, 2);
        });
        break;
      case TensorType::Q8_0: fill_q8_0(rng, init, nblocks, reinterpret_cast<quant::BlockQ8_0*>(dst)); break;
      case TensorType::Q4_K: fill_q4_k(rng, init, nblocks, reinterpret_cast<quant::BlockQ4_K*>(dst)); break;
      case TensorType::Q5_K: fill_q5_k(rng, init, nblocks, reinterpret_cast<quant::BlockQ5_K*>(dst)); break;
      case TensorType::Q6_K: fill_q6_k(rng, init, nblocks, reinterpret_cast<quant::BlockQ6_K*>(dst)); break;
      default: break;
    }
  }
}

std::vector<int32_t> random_cycle(int64_t n, uint64_t key) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[size_t(i)] = int32_t(i);
  Rng rng(key);
  for (int64_t i = n - 1; i > 0; --i) {  // Sattolo: swap with j < i (not <= i), one n-cycle
    const int64_t j = int64_t(uint64_t((__uint128_t(rng.next()) * uint64_t(i)) >> 64));
    std::swap(p[size_t(i)], p[size_t(j)]);
  }
  return p;
}

void fill_rows_copied(TensorType dst_type, TensorType src_type, int64_t ne0, uint64_t src_key, const WeightInit& src_init,
                      const int32_t* src_rows, float scale, int64_t row_begin, int64_t row_end, uint8_t* dst) {
  const TensorTypeInfo& src_info = tensor_type_info(src_type);
  const int64_t src_bytes = row_bytes(src_info, ne0), dst_bytes = row_bytes(tensor_type_info(dst_type), ne0);
  std::vector<uint8_t> raw(static_cast<size_t>(src_bytes));
  std::vector<float> x(static_cast<size_t>(ne0));
  for (int64_t row = row_begin; row < row_end; ++row, dst += dst_bytes) {
    const int64_t s = src_rows[row];
    fill_rows(src_type, ne0, src_key, s, s + 1, src_init, raw.data());
    quant::dequantize_row(src_type, raw.data(), x.data(), ne0);
    for (float& v : x) v *= scale;
    quant::quantize_row(dst_type, x.data(), dst, ne0);
  }
}

}  // namespace ckjit::synth
