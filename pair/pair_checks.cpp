#include "pair/pair_checks.h"

#include <cstdio>
#include <fstream>

#include "graph/activations.h"
#include "graph/text_model.h"
#include "runtime/error.h"
#include "topology/memory.h"
#include "vision/vision_model.h"

namespace ckjit::pair {

void check_pair(const vision::VisionHparams& v, const std::string& mmproj_name, const graph::Hparams& text,
                const std::string& model_name) {
  if (v.proj_dim != text.n_embd || v.n_deepstack() != text.n_deepstack)
    throw Error(mmproj_name + ": its rows are " + std::to_string(v.proj_dim) + " x (1 + " + std::to_string(v.n_deepstack()) +
                    " deepstack) wide, but " + model_name + " needs n_embd x (1 + deepstack) = " + std::to_string(text.n_embd) +
                    " x (1 + " + std::to_string(text.n_deepstack) + "): the mmproj belongs to another model",
                ErrorKind::bad_model);
}

void require_readable(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(std::string("cannot open ") + what + " '" + path + "'", ErrorKind::io);
}

void require_load_memory(const gguf::GgufFile& text, const graph::Hparams& hp, const gguf::GgufFile* mmproj, vision::VisionPrecision precision,
                         int sessions, int64_t n_ctx, int64_t n_batch) {
  const double mib = 1048576.0;
  const double text_bytes = graph::TextModel::load_bytes(text);
  const double vision_bytes = mmproj ? vision::VisionModel::load_bytes(*mmproj, precision) : 0.0;
  char what[400];
  int n = std::snprintf(what, sizeof what, "the model's weights (text model %.0f MiB, vision tower %.0f MiB, repacked)", text_bytes / mib,
                        vision_bytes / mib);
  double total = text_bytes + vision_bytes;
  if (sessions > 0) {
    const graph::SessionBytes b = graph::session_bytes_before_load(hp, n_ctx, n_batch);
    total += double(sessions) * (b.kv + b.activations);
    std::snprintf(what + n, sizeof what - size_t(n), " and %s, a KV cache for $n_ctx %lld (%.0f MiB) and activations for $n_batch %lld (%.0f MiB)%s",
                  sessions == 1 ? "one session" : (std::to_string(sessions) + " sessions ($n_sessions)").c_str(), (long long)n_ctx, b.kv / mib,
                  (long long)n_batch, b.activations / mib, sessions == 1 ? "" : " each");
  }
  topo::require_memory(total, what, sessions > 1 ? "lower $n_ctx or $n_sessions, or use a smaller model or quantization"
                                    : sessions == 1 ? "lower $n_ctx, or use a smaller model or quantization"
                                                    : "use a smaller model or quantization");
}

}  // namespace ckjit::pair
