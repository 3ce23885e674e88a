// Sampler: greedy, seeded determinism, and the semantics of each chain step.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <vector>

#include "runtime/error.h"
#include "runtime/sampler.h"

using namespace ckjit;

namespace {
std::vector<Candidate> cands(const std::vector<float>& logits) {
  std::vector<Candidate> c;
  for (size_t i = 0; i < logits.size(); ++i) c.push_back({int32_t(i), logits[i], 0.0f});
  return c;
}
std::set<int32_t> ids(const std::vector<Candidate>& c) {
  std::set<int32_t> s;
  for (auto& x : c) s.insert(x.id);
  return s;
}
}  // namespace

TEST_SUITE("decoder") {

TEST_CASE("sampler: greedy is the argmax / ties to the lowest id") {
  std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  SamplerParams p;  // temp 0
  Sampler s(p, 5);
  CHECK(s.sample(l.data()) == 1);
}

TEST_CASE("sampler: same seed / same tokens - other seed / other tokens") {
  std::vector<float> l(1000);
  for (size_t i = 0; i < l.size(); ++i) l[i] = std::sin(float(i) * 0.37f) * 2.0f;
  SamplerParams p;
  p.temp = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 42;
  auto draw = [&](uint64_t seed) {
    SamplerParams q = p;
    q.seed = seed;
    Sampler s(q, 1000);
    std::vector<int32_t> out;
    for (int i = 0; i < 50; ++i) out.push_back(s.sample(l.data()));
    return out;
  };
  CHECK(draw(42) == draw(42));
  CHECK(draw(42) != draw(43));
}

TEST_CASE("sampler: top-k keeps the k best") {
  auto c = cands({1.0f, 5.0f, 3.0f, 4.0f, 2.0f});
  sampling::top_k(c, 2);
  CHECK(ids(c) == std::set<int32_t>{1, 3});
  CHECK(c[0].id == 1);
}

TEST_CASE("sampler: top-p keeps the smallest prefix reaching the mass") {
  // probabilities 0.5, 0.25, 0.125, 0.125
  auto c = cands({std::log(0.5f), std::log(0.25f), std::log(0.125f), std::log(0.125f)});
  sampling::top_k(c, 0);
  auto c1 = c;
  sampling::top_p(c1, 0.6f);
  CHECK(ids(c1) == std::set<int32_t>{0, 1});
  auto c2 = c;
  sampling::top_p(c2, 0.4f);
  CHECK(ids(c2) == std::set<int32_t>{0});
}

TEST_CASE("sampler: min-p drops tokens below min_p times the best probability") {
  auto c = cands({std::log(0.5f), std::log(0.3f), std::log(0.04f), std::log(0.16f)});
  sampling::top_k(c, 0);
  sampling::min_p(c, 0.1f);  // threshold 0.05
  CHECK(ids(c) == std::set<int32_t>{0, 1, 3});
}

TEST_CASE("sampler: repetition penalty divides positive and multiplies negative logits once per id") {
  std::vector<float> l = {2.0f, -1.0f, 3.0f, 1.0f};
  std::vector<int32_t> recent = {0, 1, 0};
  sampling::penalties(l, recent, 2.0f);
  CHECK(l[0] == 1.0f);
  CHECK(l[1] == -2.0f);
  CHECK(l[2] == 3.0f);
  // Greedy with the penalty: token 2 was best anyway; penalise it and token 3 wins over the halved 2.
  SamplerParams p;
  p.repeat_penalty = 4.0f;
  Sampler s(p, 4);
  std::vector<float> l2 = {2.0f, -1.0f, 3.0f, 1.0f};
  CHECK(s.sample(l2.data()) == 2);
  s.accept(2);
  s.accept(0);
  CHECK(s.sample(l2.data()) == 3);
}

TEST_CASE("sampler: frequency and presence penalties subtract per occurrence and once / after the repetition penalty") {
  std::vector<float> l = {2.0f, -1.0f, 3.0f, 1.0f};
  std::vector<int32_t> recent = {0, 1, 0, 0};
  sampling::penalties(l, recent, 2.0f, 0.5f, 0.25f);
  CHECK(l[0] == 2.0f / 2.0f - 3 * 0.5f - 0.25f);
  CHECK(l[1] == -1.0f * 2.0f - 1 * 0.5f - 0.25f);
  CHECK(l[2] == 3.0f);
  CHECK(l[3] == 1.0f);
  // Through the sampler (greedy): token 2 is best until it has been seen twice.
  SamplerParams p;
  p.frequency_penalty = 0.6f;
  Sampler s(p, 4);
  std::vector<float> l2 = {2.0f, -1.0f, 3.0f, 1.0f};
  s.accept(2);
  CHECK(s.sample(l2.data()) == 2);  // 3 - 0.6 > 2
  s.accept(2);
  CHECK(s.sample(l2.data()) == 0);  // 3 - 1.2 < 2
}

TEST_CASE("sampler: logit bias is added before everything else and bans with -inf") {
  SamplerParams p;
  p.logit_bias = {{2, -INFINITY}, {3, 1.5f}};
  Sampler s(p, 4);
  std::vector<float> l = {2.0f, -1.0f, 3.0f, 1.0f};
  CHECK(s.sample(l.data()) == 3);  // 1 + 1.5 > 2, and 2 is banned
  p.temp = 1.0f;
  p.logit_bias = {{0, -INFINITY}, {1, -INFINITY}, {3, -INFINITY}};
  Sampler t(p, 4);
  for (int i = 0; i < 20; ++i) CHECK(t.sample(l.data()) == 2);
  p.logit_bias = {{4, 1.0f}};
  CHECK_THROWS_AS(Sampler(p, 4), Error);
  p.logit_bias = {{1, NAN}};
  CHECK_THROWS_AS(Sampler(p, 4), Error);
  p.logit_bias = {};
  p.presence_penalty = INFINITY;
  CHECK_THROWS_AS(Sampler(p, 4), Error);
}

TEST_CASE("sampler: sampled tokens stay inside the kept set") {
  std::vector<float> l = {0.0f, 10.0f, 9.5f, 9.0f, -5.0f, 8.0f};
  SamplerParams p;
  p.temp = 2.0f;
  p.top_k = 3;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  Sampler s(p, 6);
  for (int i = 0; i < 200; ++i) {
    int32_t t = s.sample(l.data());
    CHECK((t == 1 || t == 2 || t == 3));
  }
}

TEST_CASE("sampler: bad parameters are errors") {
  SamplerParams p;
  p.repeat_penalty = 0.0f;
  CHECK_THROWS_AS(Sampler(p, 10), Error);
}

}  // TEST_SUITE
