// "Nothing is allocated per token": a decode step (eval of one token) must not touch the heap.
// Counts global operator new calls while a flag is set (this TU replaces operator new for the test
// binary; the count is only taken inside the test).
#include <doctest/doctest.h>

#include "tests/unit/sanitizers.h"

// AddressSanitizer replaces the allocation functions itself; the count is taken in normal builds.
#if !CKJIT_TEST_ASAN

#include <atomic>
#include <cstdlib>
#include <new>

#include "graph/session.h"
#include "graph/text_model.h"
#include "tiny_qwen3vl.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_news{0};
}  // namespace

// GCC cannot see that the replaced new below is malloc-based.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

TEST_SUITE("decoder") {
TEST_CASE("decoder: a decode step allocates nothing") {
  using namespace ckjit;
  tinymodel::Spec s;
  gguf::GgufFile f = gguf::GgufFile::from_bytes(tinymodel::bytes(s), "tiny.gguf");
  Workers pool(2);
  graph::SessionOptions o;
  o.n_ctx = 64;
  graph::TextModel model(f, graph::ModelOptions{}, pool);
  graph::Session d(model, o, pool);
  const int32_t prompt[3] = {5, 6, 7};
  d.decode(graph::Batch::text(prompt, 0));
  graph::Batch step;  // reused, as generate() does: clear() keeps its capacity
  step.add_token(9, graph::Position::text(d.next_position()), true);
  d.decode(step);  // warm-up (kernels are generated at load; nothing should be left to do)
  g_news = 0;
  g_counting = true;
  for (int i = 0; i < 8; ++i) {
    step.clear();
    step.add_token(9, graph::Position::text(d.next_position()), true);
    d.decode(step);
  }
  g_counting = false;
  CHECK(g_news.load() == 0);
}
}

#endif  // !CKJIT_TEST_ASAN
