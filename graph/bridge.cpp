#include "graph/bridge.h"

#include "jit/executor.h"
#include "runtime/error.h"

namespace ckjit::graph {

namespace {

std::vector<std::string> split_at_markers(const std::string& text) {
  std::vector<std::string> parts;
  size_t from = 0;
  const std::string marker = kMediaMarker;
  for (size_t at; (at = text.find(marker, from)) != std::string::npos; from = at + marker.size())
    parts.push_back(text.substr(from, at - from));
  parts.push_back(text.substr(from));
  return parts;
}

}  // namespace

std::string with_media_markers(const std::string& user_text, size_t n_images) {
  if (user_text.find(kMediaMarker) != std::string::npos) return user_text;
  std::string out;
  for (size_t i = 0; i < n_images; ++i) out += kMediaMarker;
  return out + user_text;
}

namespace {

int32_t special_id(const tok::Tokenizer& tok, const char* text) {
  const int32_t id = tok.find_token(text);
  if (id < 0) throw Error(std::string("the vocabulary has no ") + text + " token: not a Qwen3-VL tokenizer");
  return id;
}

}  // namespace

BridgePrompt build_bridge_prompt(const tok::Tokenizer& tok, const std::string& text, const std::vector<ImageRows>& images,
                                 int64_t n_embd, int64_t n_deepstack, int64_t p0) {
  std::vector<std::string> parts = split_at_markers(text);
  if (parts.size() == 1 && !images.empty()) parts.insert(parts.begin(), images.size(), std::string());  // images first
  if (parts.size() != images.size() + 1)
    throw Error("the prompt has " + std::to_string(parts.size() - 1) + " " + kMediaMarker + " markers for " +
                std::to_string(images.size()) + " images");
  const int32_t vstart = images.empty() ? -1 : special_id(tok, "<|vision_start|>");
  const int32_t vend = images.empty() ? -1 : special_id(tok, "<|vision_end|>");
  // Test-only faults (CKJIT_TEST_FAULT, jit/executor.h): the trained model's CER tests break M-RoPE
  // (every image row at the image's first position: the grid is lost) or drop the deepstack slices,
  // and check that the model stops reading.
  const bool fault_mrope = jit::test_fault_requested("bridge.mrope");
  const bool fault_deepstack = jit::test_fault_requested("bridge.deepstack");
  BridgePrompt out;
  int64_t pos = p0;
  auto text_rows = [&](const std::vector<int32_t>& ids) {
    if (ids.empty()) return;
    if (out.segments.empty() || out.segments.back().image) {
      BridgeSegment s;
      s.first_row = out.batch.size();
      s.first = Position::text(pos);
      out.segments.push_back(s);
    }
    BridgeSegment& s = out.segments.back();  // a text run continues the one before it
    for (int32_t id : ids) {
      out.batch.add_token(id, Position::text(pos++));
      out.token_ids.push_back(id);
    }
    s.n_rows = out.batch.size() - s.first_row;
    s.last = Position::text(pos - 1);
  };
  for (size_t i = 0; i < parts.size(); ++i) {
    std::vector<int32_t> ids = tok.encode(parts[i], /*add_special=*/i == 0, /*parse_special=*/true);
    if (i < images.size()) ids.push_back(vstart);
    text_rows(ids);
    if (i == images.size()) break;
    const ImageRows& im = images[i];
    if (im.nx < 1 || im.ny < 1 || !im.rows) throw Error("image " + std::to_string(i + 1) + ": empty grid");
    if (im.row_width != n_embd * (1 + n_deepstack))
      throw Error("image " + std::to_string(i + 1) + ": projector rows are " + std::to_string(im.row_width) +
                  " wide, the text model needs n_embd x (1 + deepstack) = " + std::to_string(n_embd) + " x " +
                  std::to_string(1 + n_deepstack) + " (mmproj and model do not match)");
    BridgeSegment s;
    s.image = true;
    s.first_row = out.batch.size();
    s.n_rows = int64_t(im.nx) * im.ny;
    for (int64_t r = 0; r < s.n_rows; ++r) {
      const Position p = fault_mrope ? Position{int32_t(pos), int32_t(pos), int32_t(pos), 0}
                                     : Position{int32_t(pos), int32_t(pos + r / im.nx), int32_t(pos + r % im.nx), 0};
      const float* row = im.rows + r * im.row_width;
      out.batch.add_embedding(row, p, n_deepstack > 0 && !fault_deepstack ? row + n_embd : nullptr);
      out.token_ids.push_back(-1);
      if (r == 0) s.first = p;
      s.last = p;
    }
    out.segments.push_back(s);
    pos += std::max(im.nx, im.ny);
    text_rows({vend});
  }
  if (out.batch.empty()) throw Error("the prompt is empty");
  out.batch.logits.back() = 1;
  out.next_position = pos;
  return out;
}

std::vector<std::string> describe_bridge(const BridgePrompt& p, int64_t n_deepstack) {
  std::vector<std::string> lines;
  for (const BridgeSegment& s : p.segments) {
    const std::string rows = "rows " + std::to_string(s.first_row) + "-" + std::to_string(s.first_row + s.n_rows - 1);
    if (!s.image) {
      lines.push_back("text " + rows + ", positions " + std::to_string(s.first.t) + "-" + std::to_string(s.last.t));
      continue;
    }
    lines.push_back("image " + rows + " (" + std::to_string(s.last.w - s.first.w + 1) + " x " +
                    std::to_string(s.last.h - s.first.h + 1) + " merged patches), t=" + std::to_string(s.first.t) +
                    " h=" + std::to_string(s.first.h) + "-" + std::to_string(s.last.h) + " w=" + std::to_string(s.first.w) +
                    "-" + std::to_string(s.last.w) +
                    (n_deepstack > 0 ? ", deepstack into layers 0-" + std::to_string(n_deepstack - 1) : ", no deepstack"));
  }
  lines.push_back("decoding continues at position " + std::to_string(p.next_position));
  return lines;
}

}  // namespace ckjit::graph
