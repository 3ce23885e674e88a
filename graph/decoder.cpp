#include "graph/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "runtime/error.h"
#include "runtime/quants/quants.h"

namespace ckjit::graph {

struct Decoder::Layer {
  const float *attn_norm, *q_norm, *k_norm, *ffn_norm;
  std::unique_ptr<Linear> wq, wk, wv, wo, gate, up, down;
};

namespace {
const float* f32_data(const gguf::TensorInfo* t) { return reinterpret_cast<const float*>(t->data); }
}  // namespace

Decoder::Decoder(const gguf::GgufFile& f, const DecoderOptions& options, Workers& pool)
    : hp_(read_hparams(f)), opt_(options), pool_(pool) {
  tensors_ = find_tensors(f, hp_);
  if (opt_.n_ctx < 1) throw Error("context length must be at least 1");
  if (opt_.n_ubatch < 1) throw Error("batch size must be at least 1");
  opt_.n_ubatch = std::min(opt_.n_ubatch, opt_.n_ctx);
  if (hp_.head_dim % 8 != 0) throw Error(f.name() + ": head dim " + std::to_string(hp_.head_dim) + " is not a multiple of 8");

  if (!opt_.linear.planner && opt_.linear.allow_jit) {
    own_planner_ = std::make_unique<LinearPlanner>(topo::detect_machine(), pool_.size());
    opt_.linear.planner = own_planner_.get();
  }
  opt_.linear.plan_rows = opt_.n_ubatch;
  const LinearSetup& ls = opt_.linear;
  LinearSetup gate_setup = ls;
  gate_setup.plan_swiglu = true;
  for (const LayerTensors& t : tensors_.layers) {
    Layer L;
    L.attn_norm = f32_data(t.attn_norm);
    L.q_norm = f32_data(t.q_norm);
    L.k_norm = f32_data(t.k_norm);
    L.ffn_norm = f32_data(t.ffn_norm);
    L.wq = std::make_unique<Linear>(*t.wq, ls);
    L.wk = std::make_unique<Linear>(*t.wk, ls);
    L.wv = std::make_unique<Linear>(*t.wv, ls);
    L.wo = std::make_unique<Linear>(*t.wo, ls);
    L.gate = std::make_unique<Linear>(*t.gate, gate_setup);
    L.up = std::make_unique<Linear>(*t.up, ls);
    L.down = std::make_unique<Linear>(*t.down, ls);
    layers_.push_back(std::move(L));
  }
  lm_head_ = std::make_unique<Linear>(*tensors_.output, ls);
  output_norm_ = f32_data(tensors_.output_norm);
  rope_ = std::make_unique<Rope>(hp_.head_dim, hp_.rope_base, hp_.rope_sections.data());
  kv_ = std::make_unique<KvCache>(hp_.n_layer, opt_.n_ctx, hp_.kv_width());

  // Activation arena for chunks of up to M rows.
  const int64_t M = opt_.n_ubatch, E = hp_.n_embd, F = hp_.n_ff, Q = hp_.q_width(), KV = hp_.kv_width();
  const int64_t kmax = std::max({E, F, Q});
  const size_t f4 = sizeof(float);
  s_.h0 = arena_.reserve("h0", size_t(M * E) * f4);
  s_.h1 = arena_.reserve("h1", size_t(M * E) * f4);
  s_.xn = arena_.reserve("xn", size_t(M * E) * f4);
  s_.xq_k = arena_.reserve("xq_q8_K", size_t(M * act_row_bytes(TensorType::Q8_K, (kmax + 255) / 256 * 256)));
  s_.xq_0 = arena_.reserve("xq_q8_0", size_t(M * act_row_bytes(TensorType::Q8_0, (kmax + 31) / 32 * 32)));
  s_.q = arena_.reserve("q", size_t(M * Q) * f4);
  s_.k = arena_.reserve("k", size_t(M * KV) * f4);
  s_.v = arena_.reserve("v", size_t(M * KV) * f4);
  s_.attn = arena_.reserve("attn", size_t(M * Q) * f4);
  s_.ffn = arena_.reserve("ffn", size_t(M * F) * f4);
  bool fused = true;
  for (const Layer& L : layers_) fused = fused && Linear::fused_swiglu(*L.gate, *L.up);
  if (opt_.linear.llama_decode_order && opt_.linear.llama_prefill_order) fused = false;
  // Unfused gate/up scratch: M rows of up, and gate|up of the one decode row.
  s_.ffn_tmp = arena_.reserve("ffn_gate_up", size_t((fused ? 2 : std::max<int64_t>(2, M)) * F) * f4);
  s_.logits = arena_.reserve("logits", size_t((opt_.all_logits ? M : 1) * hp_.n_vocab) * f4);
  att_scratch_per_worker_ = attention_scratch_floats(hp_.head_dim, opt_.n_ctx);
  s_.att_scratch = arena_.reserve("attention", size_t(pool_.size() * att_scratch_per_worker_) * f4);
  s_.cos = arena_.reserve("rope_cos", size_t(M * hp_.head_dim / 2) * f4);
  s_.sin = arena_.reserve("rope_sin", size_t(M * hp_.head_dim / 2) * f4);
  arena_.commit();
}

Decoder::~Decoder() = default;

std::vector<std::string> Decoder::plan_report() const {
  if (!opt_.linear.planner) return {"plans: none (no JIT kernels)"};
  return opt_.linear.planner->report();
}

std::vector<std::string> Decoder::dtype_report() const {
  // Group by (role, description) so the report stays one line per kind of weight.
  std::map<std::string, int> lines;
  auto add = [&](const char* role, const Linear& l) { lines[std::string(role) + ": " + l.describe()]++; };
  for (const Layer& L : layers_) {
    add("attn_q", *L.wq);
    add("attn_k", *L.wk);
    add("attn_v", *L.wv);
    add("attn_output", *L.wo);
    add("ffn_gate", *L.gate);
    add("ffn_up", *L.up);
    add("ffn_down", *L.down);
  }
  add(hp_.tied_output ? "output (tied token_embd)" : "output", *lm_head_);
  std::vector<std::string> out;
  out.push_back("token_embd: " + std::string(tensors_.token_embd->type.name) + " row gather + dequantize");
  for (auto& [text, n] : lines) out.push_back(text + "  x" + std::to_string(n));
  bool fused = true;
  for (const Layer& L : layers_) fused = fused && Linear::fused_swiglu(*L.gate, *L.up);
  if (opt_.linear.llama_decode_order && opt_.linear.llama_prefill_order) fused = false;
  out.push_back(std::string("gate/up: ") + (fused ? "fused Gate-Up SwiGLU JIT kernel" : "two matmuls + silu") +
                (!layers_.empty() && Linear::llama_swiglu_decode(*layers_[0].gate, *layers_[0].up)
                     ? " (prefill); decode: two GEMVs + llama.cpp's AVX-512 swiglu"
                     : ""));
  return out;
}

const void* Decoder::quantized_for(const Linear& lin, const float* x, int64_t k, int64_t m) {
  const bool q80 = lin.act_type() == TensorType::Q8_0;
  if (quant_src_ != x) {
    quant_src_ = x;
    quant_k_valid_ = quant_0_valid_ = false;
  }
  bool& valid = q80 ? quant_0_valid_ : quant_k_valid_;
  void* buf = q80 ? arena_.get<void>(s_.xq_0) : arena_.get<void>(s_.xq_k);
  if (!valid) {
    quantize_activations(pool_, lin.act_type(), x, k, m, k, buf);
    valid = true;
  }
  return buf;
}

const float* Decoder::eval(std::span<const int32_t> tokens, float* all_logits_out) {
  if (tokens.empty()) throw Error("eval: no tokens");
  if (all_logits_out && !opt_.all_logits) throw Error("eval: all logits requested but not planned (all_logits)");
  if (n_past_ + int64_t(tokens.size()) > opt_.n_ctx)
    throw Error("context full: " + std::to_string(n_past_) + " + " + std::to_string(tokens.size()) +
                " tokens exceed the context length " + std::to_string(opt_.n_ctx));
  for (int32_t t : tokens)
    if (t < 0 || t >= hp_.n_vocab) throw Error("token id " + std::to_string(t) + " is outside the vocabulary");
  const int64_t n = int64_t(tokens.size());
  for (int64_t b = 0; b < n; b += opt_.n_ubatch) {
    const int64_t m = std::min(opt_.n_ubatch, n - b);
    eval_chunk(tokens.data() + b, m, all_logits_out ? all_logits_out + b * hp_.n_vocab : nullptr);
  }
  return arena_.get<float>(s_.logits) + (all_logits_out ? (n - 1 - (n - 1) / opt_.n_ubatch * opt_.n_ubatch) * hp_.n_vocab : 0);
}

void Decoder::eval_chunk(const int32_t* tokens, int64_t m, float* all_logits_out) {
  const int64_t E = hp_.n_embd, F = hp_.n_ff, Q = hp_.q_width(), KV = hp_.kv_width(), D = hp_.head_dim;
  const int64_t pos0 = n_past_;
  float* h = arena_.get<float>(s_.h0);
  float* h_next = arena_.get<float>(s_.h1);
  float* xn = arena_.get<float>(s_.xn);
  float* q = arena_.get<float>(s_.q);
  float* k = arena_.get<float>(s_.k);
  float* v = arena_.get<float>(s_.v);
  float* attn = arena_.get<float>(s_.attn);
  float* ffn = arena_.get<float>(s_.ffn);
  float* cosv = arena_.get<float>(s_.cos);
  float* sinv = arena_.get<float>(s_.sin);
  const float eps = hp_.rms_eps;

  const gguf::TensorInfo* te = tensors_.token_embd;
  pool_.run(size_t(m), [&](size_t r, int) {
    quant::dequantize_row(te->type.type, te->data + int64_t(tokens[r]) * int64_t(te->row_bytes()), h + int64_t(r) * E, E);
    rope_->angles(pos0 + int64_t(r), cosv + int64_t(r) * D / 2, sinv + int64_t(r) * D / 2);
  });
  AttentionShape as{hp_.n_head, hp_.n_head_kv, D, 1.0f / std::sqrt(float(D))};

  for (size_t il = 0; il < layers_.size(); ++il) {
    Layer& L = layers_[il];
    pool_.run(size_t(m), [&](size_t r, int) { rms_norm(h + int64_t(r) * E, L.attn_norm, xn + int64_t(r) * E, E, eps); });
    quant_src_ = nullptr;
    L.wq->matmul(pool_, quantized_for(*L.wq, xn, E, m), m, q, Q);
    L.wk->matmul(pool_, quantized_for(*L.wk, xn, E, m), m, k, KV);
    L.wv->matmul(pool_, quantized_for(*L.wv, xn, E, m), m, v, KV);
    uint16_t* kc = kv_->k(int64_t(il));
    uint16_t* vc = kv_->v(int64_t(il));
    pool_.run(size_t(m), [&](size_t rr, int) {
      const int64_t r = int64_t(rr);
      float* qr = q + r * Q;
      float* kr = k + r * KV;
      for (int64_t hh = 0; hh < hp_.n_head; ++hh) rms_norm(qr + hh * D, L.q_norm, qr + hh * D, D, eps);
      for (int64_t hh = 0; hh < hp_.n_head_kv; ++hh) rms_norm(kr + hh * D, L.k_norm, kr + hh * D, D, eps);
      rope_->apply(qr, hp_.n_head, cosv + r * D / 2, sinv + r * D / 2);
      rope_->apply(kr, hp_.n_head_kv, cosv + r * D / 2, sinv + r * D / 2);
      to_f16(kr, kc + (pos0 + r) * KV, KV);
      to_f16(v + r * KV, vc + (pos0 + r) * KV, KV);
    });
    attention(pool_, as, q, m, pos0, kc, vc, attn, arena_.get<float>(s_.att_scratch), att_scratch_per_worker_);
    L.wo->matmul(pool_, quantized_for(*L.wo, attn, Q, m), m, h_next, E, h);
    std::swap(h, h_next);

    pool_.run(size_t(m), [&](size_t r, int) { rms_norm(h + int64_t(r) * E, L.ffn_norm, xn + int64_t(r) * E, E, eps); });
    quant_src_ = nullptr;
    const void* xq_gate = quantized_for(*L.gate, xn, E, m);
    const void* xq_up = quantized_for(*L.up, xn, E, m);  // the other buffer when the types differ
    Linear::swiglu(pool_, *L.gate, *L.up, xq_gate, xq_up, m, ffn, F, arena_.get<float>(s_.ffn_tmp));
    quant_src_ = nullptr;
    L.down->matmul(pool_, quantized_for(*L.down, ffn, F, m), m, h_next, E, h);
    std::swap(h, h_next);
  }

  // Final norm and LM head: every row when all logits are wanted, else only the last one.
  const int64_t first = all_logits_out ? 0 : m - 1, rows = m - first;
  pool_.run(size_t(rows), [&](size_t r, int) {
    rms_norm(h + (first + int64_t(r)) * E, output_norm_, xn + int64_t(r) * E, E, eps);
  });
  quant_src_ = nullptr;
  float* logits = arena_.get<float>(s_.logits);
  lm_head_->matmul(pool_, quantized_for(*lm_head_, xn, E, rows), rows, logits, hp_.n_vocab);
  if (all_logits_out) std::memcpy(all_logits_out, logits, size_t(rows * hp_.n_vocab) * sizeof(float));
  quant_src_ = nullptr;
  n_past_ += m;
}

}  // namespace ckjit::graph
