#include "pair/pair_checks.h"

#include <cstdarg>
#include <cstdio>
#include <fstream>

#include "graph/activations.h"
#include "graph/text_model.h"
#include "runtime/error.h"
#include "topology/memory.h"
#include "vision/vision_model.h"

namespace ckjit::pair {

namespace {
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}
}  // namespace

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

void require_load_memory(const gguf::GgufFile& text, const graph::Hparams& hp, const gguf::GgufFile* mmproj,
                         const vision::VisionHparams* vhp, vision::VisionPrecision precision, const LoadOptions::SessionPlan& plan) {
  const double mib = 1048576.0;
  const int sessions = plan.count;
  const double text_bytes = graph::TextModel::load_bytes(text);
  const double vision_bytes = mmproj ? vision::VisionModel::load_bytes(*mmproj, precision) : 0.0;
  std::string what = fmt("the model's weights (text model %.0f MiB, vision tower %.0f MiB, repacked)", text_bytes / mib, vision_bytes / mib);
  double total = text_bytes + vision_bytes;
  const bool images = sessions > 0 && vhp && plan.image_rows > 0;
  if (sessions > 0) {
    const graph::SessionBytes b = graph::session_bytes_before_load(hp, plan.n_ctx, plan.n_batch);
    // The tower's worst encode: image_rows merged rows of 4 patches each.
    const double encode = images ? vision::VisionModel::encode_bytes(*vhp, plan.image_rows * 4) : 0.0;
    total += double(sessions) * (b.kv + b.activations + encode);
    what += fmt(" and %s, a KV cache for $n_ctx %lld (%.0f MiB) and activations for $n_batch %lld (%.0f MiB)",
                sessions == 1 ? "one session" : (std::to_string(sessions) + " sessions ($n_sessions)").c_str(), (long long)plan.n_ctx,
                b.kv / mib, (long long)plan.n_batch, b.activations / mib);
    if (images) what += fmt(" and the vision tower's encode of an image of $image_max_tokens %lld rows (%.0f MiB)", (long long)plan.image_rows, encode / mib);
    if (sessions > 1) what += " each";
  }
  const std::string lower = std::string(images ? "lower $n_ctx or $image_max_tokens" : "lower $n_ctx") + (sessions > 1 ? " or $n_sessions" : "");
  topo::require_memory(total, what, sessions > 0 ? lower + ", or use a smaller model or quantization" : "use a smaller model or quantization");
}

}  // namespace ckjit::pair
