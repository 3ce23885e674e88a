#include "xray/llama_dump.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "runtime/error.h"
#include "runtime/json.h"

namespace ckjit::xray {

namespace {

// llama.cpp's text node (without "-<layer>") -> ckjit suffix; "first"/"last": which of the
// ubatch's records of that name (Qcur is dumped after the matmul, reshaped, and after RoPE).
struct TextName {
  const char* llama;
  const char* first;
  const char* last;  // nullptr: none
};
const TextName kText[] = {
    {"attn_norm", "attn_norm", nullptr}, {"Qcur", "q", "q_roped"},     {"Qcur_normed", "q_normed", nullptr},
    {"Kcur", "k", "k_roped"},            {"Kcur_normed", "k_normed", nullptr}, {"Vcur", "v", nullptr},
    {"kqv_out", "attn_out", nullptr},    {"ffn_inp", "attn_residual", nullptr}, {"ffn_norm", "ffn_norm", nullptr},
    {"ffn_swiglu", "ffn_act", nullptr},  {"l_out", "l_out", nullptr},      {"deepstack_out", "deepstack_out", nullptr},
};
const std::pair<const char*, const char*> kVision[] = {
    {"ln1", "ln1"}, {"Qcur_rope", "q_roped"}, {"Kcur_rope", "k_roped"}, {"kqv_out", "attn"}, {"ffn_inp", "attn_residual"}, {"ffn_inp_normed", "ln2"},
    {"ffn_gelu", "ffn_act"}, {"layer_out", "block_out"},
};

struct Node {
  std::string graph, base;
  int64_t layer = -1;  // -1: a model-level node
  int64_t elements = 0, offset = 0;
};

// "Qcur-3" -> ("Qcur", 3); "result_norm" -> ("result_norm", -1).
void split_name(const std::string& name, std::string& base, int64_t& layer) {
  const size_t dash = name.rfind('-');
  base = name, layer = -1;
  if (dash == std::string::npos || dash + 1 == name.size()) return;
  for (size_t i = dash + 1; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return;
  if (name.size() - dash > 6) return;
  base = name.substr(0, dash), layer = std::stoll(name.substr(dash + 1));
}

std::vector<float> read_floats(const std::string& path, int64_t offset, int64_t n) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("llama.cpp dump: cannot read " + path);
  in.seekg(offset);
  std::vector<float> v(static_cast<size_t>(n));
  in.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * 4));
  if (!in) throw Error("llama.cpp dump: " + path + " is shorter than its index.json says");
  return v;
}

class Builder {
 public:
  void add(const std::string& name, int64_t cols, const std::vector<float>& data, int64_t pos0) {
    auto it = index_.find(name);
    if (it == index_.end()) it = index_.emplace(name, out_.size()).first, out_.push_back(TapRecord{name, cols, {}, {}});
    TapRecord& r = out_[it->second];
    const int64_t n = int64_t(data.size()) / cols;
    for (int64_t i = 0; i < n; ++i) r.rows.push_back(pos0 + i);
    r.data.insert(r.data.end(), data.begin(), data.end());
  }
  std::vector<TapRecord> take() { return std::move(out_); }

 private:
  std::vector<TapRecord> out_;
  std::map<std::string, size_t> index_;
};

std::string shape_error(const std::string& dir, const std::string& what) {
  return "llama.cpp dump " + dir + " does not belong to this run: " + what +
         " (a dump of another model, prompt or image; record it again for this one)";
}

}  // namespace

std::string llama_dump_filter(bool vision) {
  std::string f = "^((attn_norm|Qcur|Qcur_normed|Kcur|Kcur_normed|Vcur|kqv_out|ffn_inp|ffn_norm|ffn_swiglu|l_out|deepstack_out)-[0-9]+"
                  "|result_norm|result_output)$";
  if (vision) f += "|^((ln1|Qcur_rope|Kcur_rope|ffn_inp_normed|ffn_gelu|layer_out)-[0-9]+|patch_bias)$";
  return f;
}

std::vector<TapRecord> read_llama_dump(const std::string& dir, const DumpShape& s) {
  const std::string index_path = dir + "/index.json";
  if (!std::filesystem::exists(index_path))
    throw Error("llama.cpp dump " + dir + ": no index.json (record it with peer-cli --dump-tensors DIR)");
  const JsonValue index = parse_json_file(index_path);
  std::vector<Node> nodes;
  for (const JsonValue& r : index.as_array("index.json")) {
    if (r.at("type").as_string() != "f32") continue;
    Node n;
    n.graph = r.at("graph").as_string();
    split_name(r.at("name").as_string(), n.base, n.layer);
    const auto& ne = r.at("ne").as_array();
    n.elements = 1;
    for (const auto& d : ne) {
      const int64_t v = d.as_int();
      // A hostile index must not size an allocation: every extent positive, the record < 16 GiB.
      if (v < 0 || v > (int64_t(1) << 34) || (v > 0 && n.elements > (int64_t(1) << 32) / v))
        throw Error("llama.cpp dump " + dir + ": a record's shape is out of range");
      n.elements *= v;
    }
    n.offset = r.at("offset").as_int();
    if (n.offset < 0 || r.at("bytes").as_int() != n.elements * 4)
      throw Error("llama.cpp dump " + dir + ": a record's offset or bytes do not match its shape");
    nodes.push_back(std::move(n));
  }
  auto text_cols = [&](const std::string& suffix) -> int64_t {
    if (suffix == "q" || suffix == "q_normed" || suffix == "q_roped" || suffix == "attn_out") return s.q_width;
    if (suffix == "k" || suffix == "k_normed" || suffix == "k_roped" || suffix == "v") return s.kv_width;
    if (suffix == "ffn_act") return s.n_ff;
    return s.n_embd;
  };
  Builder b;
  // Text graph: ubatches start at each attn_norm-0.
  int64_t ub_start = 0, ub_rows = -1;
  std::map<std::string, std::vector<const Node*>> in_ub;  // this ubatch's records by ckjit "first" name
  auto place = [&](const std::string& name, int64_t cols, const Node& n) {
    if (n.elements % cols != 0)
      throw Error(shape_error(dir, name + " has " + std::to_string(n.elements) + " values, not whole rows of " + std::to_string(cols)));
    const int64_t rows = n.elements / cols;
    if (rows > ub_rows)
      throw Error(shape_error(dir, name + " has " + std::to_string(rows) + " rows in a ubatch of " + std::to_string(ub_rows)));
    b.add(name, cols, read_floats(dir + "/text.bin", n.offset, n.elements), ub_start + ub_rows - rows);
  };
  auto flush_ub = [&] {
    for (const TextName& t : kText)
      for (int64_t l = 0; l < s.n_layer; ++l) {
        auto it = in_ub.find(std::string(t.llama) + "-" + std::to_string(l));
        if (it == in_ub.end() || it->second.empty()) continue;
        const std::string first = "L" + std::to_string(l) + "." + t.first;
        place(first, text_cols(t.first), *it->second.front());
        if (t.last && it->second.size() >= 2) place("L" + std::to_string(l) + "." + t.last, text_cols(t.last), *it->second.back());
      }
    for (const char* m : {"result_norm", "result_output"})
      if (auto it = in_ub.find(m); it != in_ub.end() && !it->second.empty())
        place(m == std::string("result_norm") ? "final_norm" : "logits", m == std::string("result_norm") ? s.n_embd : s.n_vocab,
              *it->second.front());
    in_ub.clear();
  };
  int64_t max_layer = -1;
  for (const Node& n : nodes) {
    if (n.graph != "text") continue;
    if (n.base == "attn_norm" && n.layer == 0) {
      if (ub_rows >= 0) flush_ub(), ub_start += ub_rows;
      if (n.elements % s.n_embd != 0)
        throw Error(shape_error(dir, "attn_norm-0 rows are not " + std::to_string(s.n_embd) + " wide (this model's n_embd)"));
      ub_rows = n.elements / s.n_embd;
    }
    if (ub_rows < 0) continue;
    max_layer = std::max(max_layer, n.layer);
    in_ub[n.layer >= 0 ? n.base + "-" + std::to_string(n.layer) : n.base].push_back(&n);
  }
  if (ub_rows < 0) throw Error("llama.cpp dump " + dir + ": no attn_norm-0 records (record with --dump-filter '" + llama_dump_filter(false) + "')");
  flush_ub();
  ub_start += ub_rows;
  if (max_layer + 1 != s.n_layer)
    throw Error(shape_error(dir, "it has " + std::to_string(max_layer + 1) + " layers, this model " + std::to_string(s.n_layer)));
  if (ub_start != s.n_rows)
    throw Error(shape_error(dir, "it covers " + std::to_string(ub_start) + " rows, this trajectory " + std::to_string(s.n_rows)));

  // Vision graph (one image): rows are patches in merge order. llama.cpp reuses a block's names
  // inside the deepstack mergers (other widths, a quarter of the rows): the first record of a
  // name with this image's shape is the checkpoint, the others are other nodes.
  std::map<std::string, std::string> misfit;  // checkpoint -> why its records did not fit
  std::map<std::string, bool> taken;
  for (const Node& n : nodes) {
    if (n.graph != "vision") continue;
    std::string name;
    int64_t cols = s.v_embd;
    if (n.base == "patch_bias" && n.layer < 0) name = "V.patch_embd";
    for (const auto& [ll, ck] : kVision)
      if (n.base == ll && n.layer >= 0) name = "V" + std::to_string(n.layer) + "." + ck, cols = n.base == "ffn_gelu" ? s.v_ff : s.v_embd;
    if (name.empty() || taken[name]) continue;
    if (s.v_layers == 0) throw Error(shape_error(dir, "it holds a vision graph, this run has no image"));
    if (n.layer >= s.v_layers) throw Error(shape_error(dir, "vision layer " + std::to_string(n.layer) + " of a tower of " + std::to_string(s.v_layers)));
    if (n.base == "Qcur_rope" || n.base == "Kcur_rope") cols = s.v_embd;
    if (n.elements != cols * s.v_patches) {
      misfit[name] = name + " has " + std::to_string(n.elements) + " values, this image " + std::to_string(s.v_patches) +
                     " patches of " + std::to_string(cols);
      continue;
    }
    b.add(name, cols, read_floats(dir + "/vision.bin", n.offset, n.elements), 0);
    taken[name] = true;
  }
  for (const auto& [name, why] : misfit)
    if (!taken[name]) throw Error(shape_error(dir, why));
  std::vector<TapRecord> out = b.take();
  return out;
}

std::vector<TapRecord> read_llama_embd(const std::string& path, const DumpShape& s) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error("llama.cpp projector rows: cannot read " + path);
  const int64_t width = s.proj_dim * (1 + s.n_deepstack), rows = s.v_patches / 4;
  if (int64_t(size) != rows * width * 4)
    throw Error("llama.cpp projector rows " + path + " hold " + std::to_string(size) + " bytes, this image " + std::to_string(rows) +
                " rows of " + std::to_string(width) + " floats (another model or image)");
  const std::vector<float> all = read_floats(path, 0, rows * width);
  std::vector<TapRecord> out;
  for (int64_t k = 0; k <= s.n_deepstack; ++k) {
    TapRecord r{k == 0 ? "V.merger" : "V.deepstack" + std::to_string(k - 1), s.proj_dim, {}, {}};
    for (int64_t i = 0; i < rows; ++i) {
      r.rows.push_back(i);
      r.data.insert(r.data.end(), all.begin() + i * width + k * s.proj_dim, all.begin() + i * width + (k + 1) * s.proj_dim);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ckjit::xray
