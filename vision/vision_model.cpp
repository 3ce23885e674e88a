#include "vision/vision_model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>

#include "runtime/checkpoints.h"
#include "jit/packed_weights.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"
#include "vision/amx_bf16_attention.h"
#include "vision/amx_bf16_linear.h"
#include "vision/int8_linear.h"

namespace ckjit::vision {
namespace {

const float* f32_data(const gguf::GgufFile& f, const std::string& name) {
  return reinterpret_cast<const float*>(f.tensor(name).data);
}

// A GGUF matrix of any vision type as f32 rows (n rows of k).
std::vector<float> rows_f32(const gguf::TensorInfo& t) {
  const int64_t k = t.ne[0], n = t.n_rows();
  std::vector<float> out(size_t(n * k));
  for (int64_t r = 0; r < n; ++r) quant::dequantize_row(t.type.type, t.data + r * t.row_bytes(), out.data() + r * k, k);
  return out;
}

// Whether a matrix of this type runs in int8 under `precision`.
bool runs_int8(const gguf::TensorInfo& t, VisionPrecision precision) {
  return precision == VisionPrecision::int8 && Int8Linear::supports(t);
}

std::unique_ptr<VisionMatmul> matmul(const gguf::GgufFile& f, const std::string& w, const std::string& b, const topo::Isa& isa,
                                     int threads, VisionPrecision precision) {
  const gguf::TensorInfo& t = f.tensor(w);
  if (runs_int8(t, precision)) return std::make_unique<Int8Linear>(t, f.tensor(b), isa, threads);
  if (precision == VisionPrecision::bf16) {
    if (AmxBf16Linear::runs(t, isa)) return std::make_unique<AmxBf16Linear>(t, f.tensor(b), isa, threads);
    // No AMX-BF16 here: the same bf16 values in f32 FMA chains.
    const float* bias = f32_data(f, b);
    auto lin = std::make_unique<DenseLinear>(rows_f32(t), t.ne[1], t.ne[0], std::vector<float>(bias, bias + t.ne[1]),
                                             TensorType::BF16, isa, threads, TensorType::BF16);
    lin->set_name(w);
    return lin;
  }
  return std::make_unique<DenseLinear>(t, f.tensor(b), isa, threads);
}

void grow(std::vector<float>& v, int64_t n) {
  if (int64_t(v.size()) < n) v.resize(size_t(n));
}

}  // namespace

uint64_t ImageEmbedding::next_id() {
  static std::atomic<uint64_t> n{1};
  return n.fetch_add(1, std::memory_order_relaxed);
}

const char* precision_name(VisionPrecision p) {
  return p == VisionPrecision::int8 ? "int8" : p == VisionPrecision::bf16 ? "bf16" : "f32";
}

VisionPrecision parse_precision(const std::string& text) {
  if (text == "f32") return VisionPrecision::f32;
  if (text == "int8") return VisionPrecision::int8;
  if (text == "bf16") return VisionPrecision::bf16;
  throw Error("unknown vision precision '" + printable_ascii(text) + "' (f32, int8 or bf16)", ErrorKind::invalid_argument);
}

VisionModel::VisionModel(const gguf::GgufFile& f, const topo::Isa& isa, Workers& pool, VisionPrecision precision)
    : hp_(read_vision_hparams(f)), isa_(isa),
      amx_bf16_attention_(precision == VisionPrecision::bf16 && AmxBf16Attention::runs(isa)), gelu_(isa) {
  const int threads = pool.size();
  const jit::RepackPoolScope repack_on(pool.pool());  // the repacks use the model's pinned workers
  const int64_t C = hp_.n_embd, P = hp_.patch;
  // Patch embedding: llama.cpp convolves with each temporal kernel and adds; for a still image both
  // see the same pixels, so one kernel W0 + W1 (summed in f32) does the same work once. Its input is
  // rounded like llama.cpp's im2col buffer: F16 unless the kernel is F32.
  const gguf::TensorInfo& w0 = f.tensor("v.patch_embd.weight");
  std::vector<float> w = rows_f32(w0);
  if (const gguf::TensorInfo* w1 = f.find_tensor("v.patch_embd.weight.1")) {
    std::vector<float> b = rows_f32(*w1);
    for (size_t i = 0; i < w.size(); ++i) w[i] += b[i];
  }
  const float* pb = f32_data(f, "v.patch_embd.bias");
  patch_ = std::make_unique<DenseLinear>(w, C, 3 * P * P, std::vector<float>(pb, pb + C),
                                         w0.type.type == TensorType::F32 ? TensorType::F32 : TensorType::F16, isa, threads);
  const float* pos = f32_data(f, "v.position_embd.weight");
  pos_.assign(pos, pos + hp_.pos_side * hp_.pos_side * C);

  deepstack_of_layer_.assign(size_t(hp_.n_layer), -1);
  for (size_t i = 0; i < hp_.deepstack_layers.size(); ++i) deepstack_of_layer_[size_t(hp_.deepstack_layers[i])] = int(i);
  for (int64_t l = 0; l < hp_.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    Layer L;
    L.ln1_w = f32_data(f, b + "ln1.weight"), L.ln1_b = f32_data(f, b + "ln1.bias");
    L.ln2_w = f32_data(f, b + "ln2.weight"), L.ln2_b = f32_data(f, b + "ln2.bias");
    L.qkv = matmul(f, b + "attn_qkv.weight", b + "attn_qkv.bias", isa, threads, precision);
    L.out = matmul(f, b + "attn_out.weight", b + "attn_out.bias", isa, threads, precision);
    L.up = matmul(f, b + "ffn_up.weight", b + "ffn_up.bias", isa, threads, precision);
    L.down = matmul(f, b + "ffn_down.weight", b + "ffn_down.bias", isa, threads, precision);
    for (const char* t : {"attn_qkv.weight", "attn_out.weight", "ffn_up.weight", "ffn_down.weight"})
      gguf::release_pages(f.tensor(b + t));
    layers_.push_back(std::move(L));
  }
  main_.norm_w = f32_data(f, "v.post_ln.weight"), main_.norm_b = f32_data(f, "v.post_ln.bias");
  main_.fc1 = matmul(f, "mm.0.weight", "mm.0.bias", isa, threads, precision);
  main_.fc2 = matmul(f, "mm.2.weight", "mm.2.bias", isa, threads, precision);
  for (int64_t l : hp_.deepstack_layers) {
    const std::string b = "v.deepstack." + std::to_string(l) + ".";
    Merger m;
    m.norm_w = f32_data(f, b + "norm.weight"), m.norm_b = f32_data(f, b + "norm.bias");
    m.fc1 = matmul(f, b + "fc1.weight", b + "fc1.bias", isa, threads, precision);
    m.fc2 = matmul(f, b + "fc2.weight", b + "fc2.bias", isa, threads, precision);
    deepstack_.push_back(std::move(m));
    for (const char* t : {"fc1.weight", "fc2.weight"}) gguf::release_pages(f.tensor(b + t));
  }
  // Every matrix now lives in its packed copy: the file's pages need not stay resident.
  for (const char* t : {"mm.0.weight", "mm.2.weight", "v.patch_embd.weight", "v.patch_embd.weight.1"})
    if (const gguf::TensorInfo* ti = f.find_tensor(t)) gguf::release_pages(*ti);
}

VisionModel::~VisionModel() = default;

image::PreprocessParams VisionModel::preprocess_params(int64_t min_tokens, int64_t max_tokens) const {
  image::PreprocessParams p;
  p.patch = int(hp_.patch), p.merge = int(hp_.merge);
  p.min_tokens = min_tokens, p.max_tokens = max_tokens;
  for (int c = 0; c < 3; ++c) p.mean[c] = hp_.mean[c], p.std[c] = hp_.std[c];
  return p;
}

std::vector<std::string> VisionModel::describe() const {
  std::vector<std::string> out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "vision: %lld layers, C=%lld, Fv=%lld, heads %lld x %lld, patch %lld, D=%lld, deepstack %lld",
                (long long)hp_.n_layer, (long long)hp_.n_embd, (long long)hp_.n_ff, (long long)hp_.n_head,
                (long long)hp_.head_dim, (long long)hp_.patch, (long long)hp_.proj_dim, (long long)hp_.n_deepstack());
  out.push_back(buf);
  out.push_back(patch_->describe());
  const Layer& l0 = layers_.front();
  for (const VisionMatmul* d : {l0.qkv.get(), l0.out.get(), l0.up.get(), l0.down.get(), main_.fc1.get(), main_.fc2.get()})
    out.push_back(d->describe() + (d == main_.fc1.get() || d == main_.fc2.get() ? "" : " (every layer alike)"));
  out.push_back(amx_bf16_attention_ ? "attention: bf16 AMX tiles (q, k, v, p rounded to bf16; exact softmax per row in f32)"
                                    : "attention: f32 JIT tiles over f16-rounded q, k, v (online softmax)");
  return out;
}

// LayerNorm (over C before grouping for the main merger, over 4C after it for deepstack), then
// fc1 + bias, GELU, fc2 + bias into out (n/4 rows, ldo apart).
void VisionModel::merge(Workers& pool, const Merger& m, bool norm_before_grouping, const float* z, int64_t n,
                        float* out, int64_t ldo, std::vector<float>& a, std::vector<float>& xr, std::vector<float>& h,
                        OpProfile* prof, const char* op) const {
  OpTimer t(prof, op, -1, m.fc1->work(n / 4) + m.fc2->work(n / 4), {n / 4, {m.fc1->op_desc(), m.fc2->op_desc()}});
  const int64_t C = hp_.n_embd, C4 = hp_.merged_width(), rows = n / 4;
  grow(a, n * C);
  if (norm_before_grouping) layer_norm_rows(pool, z, C, a.data(), C, n, C, m.norm_w, m.norm_b, hp_.eps);
  else layer_norm_rows(pool, z, C4, a.data(), C4, rows, C4, m.norm_w, m.norm_b, hp_.eps);
  grow(xr, rows * C4), grow(h, rows * m.fc1->n());
  m.fc1->prepare(pool, a.data(), C4, rows, xr.data());
  m.fc1->matmul(pool, xr.data(), rows, h.data(), m.fc1->n());
  gelu_.apply(pool, h.data(), m.fc1->n(), rows, m.fc1->n());
  m.fc2->prepare(pool, h.data(), m.fc1->n(), rows, xr.data());
  m.fc2->matmul(pool, xr.data(), rows, out, ldo);
}

double VisionModel::load_bytes(const gguf::GgufFile& file, VisionPrecision precision) {
  double bytes = 0;
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (t.n_dims < 2) continue;
    if (t.n_dims == 2 && runs_int8(t, precision) && std::string(t.name).rfind("v.patch_embd", 0) != 0) {
      bytes += Int8Linear::packed_bytes_for(t.ne[1], t.ne[0]);
      continue;
    }
    const bool bf16 = precision == VisionPrecision::bf16 && t.n_dims == 2 && std::string(t.name).rfind("v.patch_embd", 0) != 0;
    const bool half = bf16 || t.type.type == TensorType::F16 || t.type.type == TensorType::BF16;
    bytes += double(t.n_elements) * (half ? 2.0 : 4.0);
  }
  return bytes;
}

double VisionModel::encode_bytes(const VisionHparams& hp, int64_t n) {
  const double P2 = 3.0 * double(hp.patch * hp.patch), C = double(hp.n_embd), F = double(hp.n_ff);
  const double floats = double(n) * (P2 + std::max(P2, F) + 8.0 * C + F) + double(n / 4) * double(hp.row_width());
  // keys and values (f16-rounded, as f32) in panels of up to 16 (keys and dims padded to whole panels)
  const double kv_panels = 2.0 * 4.0 * double((n + 15) / 16 * 16) * double(hp.n_head) * double((hp.head_dim + 15) / 16 * 16);
  return 4.0 * floats + kv_panels;
}

ImageEmbedding VisionModel::encode(Workers& pool, const image::PixelsF32& px, OpProfile* prof, Tap* tap,
                                    const std::function<bool()>& abort) const {
  const int64_t P = hp_.patch, C = hp_.n_embd, F = hp_.n_ff, side = hp_.pos_side;
  if (px.width <= 0 || px.height <= 0 || px.width % (P * 2) || px.height % (P * 2) ||
      int64_t(px.rgb.size()) != int64_t(px.width) * px.height * 3)
    throw Error("vision: the preprocessed image is " + std::to_string(px.width) + " x " + std::to_string(px.height) +
                ", not a whole number of " + std::to_string(2 * P) + "-pixel merged patches");
  const int64_t gw = px.width / P, gh = px.height / P, n = gw * gh;
  if (prof) prof->set_phase(Phase::encode), prof->add_rows(Phase::encode, n);
  std::optional<OpTimer> patch_timer(std::in_place, prof, "patch_embed", -1, patch_->work(n), OpCall{n, {patch_->op_desc()}});

  // Patches in merge order, each row (c, ky, kx) like llama.cpp's im2col.
  std::vector<float> patches(size_t(n * 3 * P * P));
  for (int64_t py = 0; py < gh; ++py)
    for (int64_t pxi = 0; pxi < gw; ++pxi) {
      float* row = patches.data() + merge_index(py, pxi, gw) * 3 * P * P;
      for (int c = 0; c < 3; ++c)
        for (int64_t ky = 0; ky < P; ++ky)
          for (int64_t kx = 0; kx < P; ++kx)
            row[(c * P + ky) * P + kx] = px.rgb[size_t(((py * P + ky) * px.width + pxi * P + kx) * 3 + c)];
    }
  std::vector<float> xr(size_t(n * std::max<int64_t>(3 * P * P, F))), z(size_t(n * C)), z2(size_t(n * C));
  patch_->prepare(pool, patches.data(), 3 * P * P, n, xr.data());
  patch_->matmul(pool, xr.data(), n, z.data(), C);
  patches = {};
  // Tapped checkpoints (runtime/checkpoints.h): rows are patches in merge order.
  auto publish = [&](const std::string& name, float* data, int64_t cols) {
    if (tap) tap->publish(name, data, n, cols, cols, 0);
  };
  publish("V.patch_embd", z.data(), C);
  patch_timer.emplace(prof, "pos_embed", -1, OpWork{}, OpCall{n});

  // + the position table resized to gh x gw (bilinear, align corners), in merge order.
  for (int64_t i = 0; i < gh; ++i)
    for (int64_t j = 0; j < gw; ++j) {
      float* zr = z.data() + merge_index(i, j, gw) * C;
      if (gh == side && gw == side) {
        const float* p = pos_.data() + (i * side + j) * C;
        for (int64_t c = 0; c < C; ++c) zr[c] += p[c];
        continue;
      }
      const float ys = gh > 1 ? float(i) * float(side - 1) / float(gh - 1) : 0.0f;
      const float xs = gw > 1 ? float(j) * float(side - 1) / float(gw - 1) : 0.0f;
      const int64_t y0 = std::min<int64_t>(int64_t(ys), side - 1), x0 = std::min<int64_t>(int64_t(xs), side - 1);
      const int64_t y1 = std::min(y0 + 1, side - 1), x1 = std::min(x0 + 1, side - 1);
      const float fy = ys - float(y0), fx = xs - float(x0);
      const float* p00 = pos_.data() + (y0 * side + x0) * C;
      const float* p01 = pos_.data() + (y0 * side + x1) * C;
      const float* p10 = pos_.data() + (y1 * side + x0) * C;
      const float* p11 = pos_.data() + (y1 * side + x1) * C;
      for (int64_t c = 0; c < C; ++c)
        zr[c] += p00[c] * (1 - fx) * (1 - fy) + p01[c] * fx * (1 - fy) + p10[c] * (1 - fx) * fy + p11[c] * fx * fy;
    }

  patch_timer.reset();
  publish("V.pos_embd", z.data(), C);
  ImageEmbedding out;
  out.nx = int(gw / 2), out.ny = int(gh / 2), out.row_width = hp_.row_width();
  out.rows.assign(size_t(out.n_rows() * out.row_width), 0.0f);

  const Rope2d rope(gh, gw, hp_.head_dim);
  std::unique_ptr<AttentionOp> attention;
  if (amx_bf16_attention_) attention = std::make_unique<AmxBf16Attention>(n, hp_.n_head, hp_.head_dim, pool.size(), isa_);
  else attention = std::make_unique<VisionAttention>(n, hp_.n_head, hp_.head_dim, pool.size(), isa_);
  std::vector<float> a(size_t(n * C)), qkv(size_t(n * 3 * C)), att(size_t(n * C)), h(size_t(n * F));
  for (int64_t l = 0; l < hp_.n_layer; ++l) {
    if (abort && abort()) throw Error("the image encode was aborted (abort callback)", ErrorKind::cancelled);
    const Layer& L = layers_[size_t(l)];
    const int li = int(l);
    // "prepare" rounds a matmul's input rows to the weight's input type (f16 for an F16 tower).
    std::optional<OpTimer> t(std::in_place, prof, "layer_norm", li, OpWork{}, OpCall{n});
    layer_norm_rows(pool, z.data(), C, a.data(), C, n, C, L.ln1_w, L.ln1_b, hp_.eps);
    if (tap) publish(layer_checkpoint('V', l, "ln1"), a.data(), C);
    t.emplace(prof, "prepare", li, OpWork{}, OpCall{n, {L.qkv->prepare_desc()}});
    L.qkv->prepare(pool, a.data(), C, n, xr.data());
    t.emplace(prof, "qkv", li, L.qkv->work(n), OpCall{n, {L.qkv->op_desc()}});
    L.qkv->matmul(pool, xr.data(), n, qkv.data(), 3 * C);
    if (tap) publish(layer_checkpoint('V', l, "qkv"), qkv.data(), 3 * C);
    t.emplace(prof, "rope", li, OpWork{}, OpCall{n});
    rope.apply(pool, qkv.data(), 3 * C, hp_.n_head);      // Q
    rope.apply(pool, qkv.data() + C, 3 * C, hp_.n_head);  // K
    if (tap) {  // Q and K after RoPE: the first two thirds of each QKV row
      tap->publish(layer_checkpoint('V', l, "q_roped"), qkv.data(), n, C, 3 * C, 0);
      tap->publish(layer_checkpoint('V', l, "k_roped"), qkv.data() + C, n, C, 3 * C, 0);
    }
    t.emplace(prof, "attention", li, OpWork{2.0 * double(n) * double(n) * double(C), 0}, OpCall{n});
    attention->run(pool, qkv.data(), 3 * C, att.data(), C);
    if (tap) publish(layer_checkpoint('V', l, "attn"), att.data(), C);
    t.emplace(prof, "prepare", li, OpWork{}, OpCall{n, {L.out->prepare_desc()}});
    L.out->prepare(pool, att.data(), C, n, xr.data());
    t.emplace(prof, "out_proj", li, L.out->work(n), OpCall{n, {L.out->op_desc()}});
    L.out->matmul(pool, xr.data(), n, z2.data(), C, z.data(), C);
    std::swap(z, z2);
    if (tap) publish(layer_checkpoint('V', l, "attn_residual"), z.data(), C);
    t.emplace(prof, "layer_norm", li, OpWork{}, OpCall{n});
    layer_norm_rows(pool, z.data(), C, a.data(), C, n, C, L.ln2_w, L.ln2_b, hp_.eps);
    if (tap) publish(layer_checkpoint('V', l, "ln2"), a.data(), C);
    t.emplace(prof, "prepare", li, OpWork{}, OpCall{n, {L.up->prepare_desc()}});
    L.up->prepare(pool, a.data(), C, n, xr.data());
    t.emplace(prof, "ffn_up", li, L.up->work(n), OpCall{n, {L.up->op_desc()}});
    L.up->matmul(pool, xr.data(), n, h.data(), F);
    t.emplace(prof, "gelu", li, OpWork{}, OpCall{n});
    gelu_.apply(pool, h.data(), F, n, F);
    if (tap) publish(layer_checkpoint('V', l, "ffn_act"), h.data(), F);
    t.emplace(prof, "prepare", li, OpWork{}, OpCall{n, {L.down->prepare_desc()}});
    L.down->prepare(pool, h.data(), F, n, xr.data());
    t.emplace(prof, "ffn_down", li, L.down->work(n), OpCall{n, {L.down->op_desc()}});
    L.down->matmul(pool, xr.data(), n, z2.data(), C, z.data(), C);
    t.reset();
    std::swap(z, z2);
    if (tap) publish(layer_checkpoint('V', l, "block_out"), z.data(), C);
    if (const int ds = deepstack_of_layer_[size_t(l)]; ds >= 0) {
      float* slice = out.rows.data() + (1 + ds) * hp_.proj_dim;
      merge(pool, deepstack_[size_t(ds)], false, z.data(), n, slice, out.row_width, a, xr, h, prof, "deepstack_merger");
      if (tap) tap->publish("V.deepstack" + std::to_string(ds), slice, n / 4, hp_.proj_dim, out.row_width, 0);
    }
  }
  merge(pool, main_, true, z.data(), n, out.rows.data(), out.row_width, a, xr, h, prof, "merger");
  if (tap) tap->publish("V.merger", out.rows.data(), n / 4, hp_.proj_dim, out.row_width, 0);
  return out;
}

}  // namespace ckjit::vision
