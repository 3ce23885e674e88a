#include "pair/prompt_cache.h"

#include <algorithm>

#include "runtime/error.h"

namespace ckjit::pair {

namespace {
constexpr uint64_t kImageBit = uint64_t(1) << 63;  // token ids are non-negative int32
}

std::vector<uint64_t> prompt_row_keys(const Prompt& prompt, const RenderedPrompt& rendered) {
  std::vector<uint64_t> keys;
  if (!rendered.bridge) {
    for (int32_t id : rendered.ids) keys.push_back(uint64_t(uint32_t(id)));
    return keys;
  }
  const graph::BridgePrompt& b = *rendered.bridge;
  keys.resize(size_t(b.batch.size()));
  size_t image = 0;
  for (const graph::BridgeSegment& seg : b.segments) {
    const uint64_t id = seg.image ? prompt.images().at(image++)->id : 0;
    for (int64_t r = 0; r < seg.n_rows; ++r) {
      const size_t row = size_t(seg.first_row + r);
      keys[row] = seg.image ? kImageBit | (id << 24) | uint64_t(r) : uint64_t(uint32_t(b.batch.token[row]));
    }
  }
  return keys;
}

RenderedPrompt prompt_suffix(const RenderedPrompt& rendered, int64_t from) {
  if (from <= 0 || from >= rendered.rows())
    throw Error("prompt suffix from row " + std::to_string(from) + " of " + std::to_string(rendered.rows()));
  RenderedPrompt out;
  graph::BridgePrompt& b = out.bridge.emplace();
  if (!rendered.bridge) {
    const std::vector<int32_t>& ids = rendered.ids;
    const int64_t n = int64_t(ids.size());
    for (int64_t i = from; i < n; ++i) b.batch.add_token(ids[size_t(i)], graph::Position::text(i), i + 1 == n);
    b.segments.push_back({false, 0, n - from, graph::Position::text(from), graph::Position::text(n - 1)});
    b.token_ids = ids;
    b.next_position = n;
    return out;
  }
  const graph::BridgePrompt& in = *rendered.bridge;
  const graph::Batch& src = in.batch;
  for (int64_t i = from; i < src.size(); ++i) {
    const size_t r = size_t(i);
    if (src.token[r] >= 0) b.batch.add_token(src.token[r], src.pos[r], src.logits[r] != 0);
    else b.batch.add_embedding(src.embd[r], src.pos[r], src.deepstack[r], src.logits[r] != 0);
  }
  for (const graph::BridgeSegment& seg : in.segments) {
    const int64_t first = std::max(seg.first_row, from), end = seg.first_row + seg.n_rows;
    if (first >= end) continue;
    b.segments.push_back({seg.image, first - from, end - first, src.pos[size_t(first)], seg.last});
  }
  b.token_ids = in.token_ids;
  b.next_position = in.next_position;
  return out;
}

namespace {

struct Span {
  int64_t first, n;
};

std::vector<Span> segment_spans(const RenderedPrompt& r) {
  if (!r.bridge) return {{0, r.rows()}};
  std::vector<Span> out;
  for (const graph::BridgeSegment& seg : r.bridge->segments) out.push_back({seg.first_row, seg.n_rows});
  return out;
}

// The rows at or after `from` that run as one-row chunks when the prompt is prefilled from row
// `from` (each segment, cut at `from`, in chunks of n_ubatch from its first row).
std::vector<int64_t> single_row_chunks(const std::vector<Span>& spans, int64_t from, int64_t n_ubatch) {
  std::vector<int64_t> rows;
  for (const Span& s : spans) {
    const int64_t first = std::max(s.first, from), end = s.first + s.n;
    for (int64_t c = first; c < end; c += n_ubatch)
      if (std::min(n_ubatch, end - c) == 1) rows.push_back(c);
  }
  return rows;
}

}  // namespace

int64_t PromptCache::reusable(const std::vector<uint64_t>& keys, const RenderedPrompt& rendered, int64_t n_past,
                              int64_t n_ubatch) const {
  const int64_t limit = std::min({int64_t(keys_.size()), n_past, int64_t(keys.size()) - 1});
  int64_t n = 0;
  while (n < limit && keys_[size_t(n)] == keys[size_t(n)]) ++n;
  const std::vector<Span> spans = segment_spans(rendered);
  const std::vector<int64_t> whole = single_row_chunks(spans, 0, n_ubatch);
  for (; n > 0; --n) {
    std::vector<int64_t> tail;
    for (int64_t r : whole)
      if (r >= n) tail.push_back(r);
    if (single_row_chunks(spans, n, n_ubatch) == tail) break;
  }
  return n;
}

void PromptCache::forget_from(int64_t n_past) {
  if (int64_t(keys_.size()) > n_past) keys_.resize(size_t(std::max<int64_t>(0, n_past)));
}

}  // namespace ckjit::pair
