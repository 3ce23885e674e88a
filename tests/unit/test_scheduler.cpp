// graph::Scheduler (continuous batching): streams that join at different steps, with greedy,
// sampled, forced and callback-stopped generation, prompts cut into several prefill chunks, get
// exactly what generate() gives each alone: the same ids, text and logits bytes. Cancel ends a
// stream without touching the others.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "graph/generate.h"
#include "graph/scheduler.h"
#include "graph/session.h"
#include "graph/text_model.h"
#include "runtime/error.h"
#include "tiny_qwen3vl.h"
#include "tokenizer_fixture.h"

using namespace ckjit;
using namespace ckjit::graph;

namespace {

struct Request {
  std::vector<int32_t> prompt;
  GenerateOptions o;
  int stop_after = -1;  // on_token returns false after this many tokens
};

struct Seen {
  std::string text, logits;
  std::vector<int32_t> ids;
};

GenerateCallbacks callbacks(Seen& seen, int stop_after) {
  GenerateCallbacks cb;
  cb.on_text = [&seen](const std::string& t) { seen.text += t; };
  cb.on_logits = [&seen](const float* l, int64_t n) { seen.logits.append(reinterpret_cast<const char*>(l), size_t(n) * 4); };
  cb.on_token = [&seen, stop_after](int32_t id, const std::string&) {
    seen.ids.push_back(id);
    return stop_after < 0 || int(seen.ids.size()) < stop_after;
  };
  return cb;
}

}  // namespace

TEST_SUITE("decoder") {

TEST_CASE("scheduler: streams joining at different steps get what generate() gives each alone") {
  tinymodel::Spec spec;
  spec.vocab = &tokfix::qwen3_vocab();
  spec.n_vocab = 151936;
  const gguf::GgufFile f = gguf::GgufFile::from_bytes(tinymodel::bytes(spec), "tiny.gguf");
  const tok::Tokenizer tk(tokfix::qwen3_vocab());
  Workers pool(2);
  const TextModel m(f, ModelOptions{}, pool);
  SessionOptions so;
  so.n_ctx = 96, so.n_ubatch = 8;  // prompts of 9-30 tokens: two to four prefill chunks

  std::vector<Request> reqs;
  const char* texts[] = {"The page lists three invoices and a total.", "Read the table.",
                         "Columns: date, amount, payee; rows follow, one per line, until the end of the page.",
                         "A short one.", "Handwriting in the margin says: call back on Tuesday at nine."};
  for (int i = 0; i < 5; ++i) {
    Request r;
    r.prompt = tk.encode(texts[i], true, true);
    r.o.n_predict = 6 + 2 * i;
    r.o.ignore_eos = true;
    reqs.push_back(r);
  }
  reqs[1].o.sampler.temp = 0.8f, reqs[1].o.sampler.seed = 3, reqs[1].o.sampler.repeat_penalty = 1.1f;
  reqs[2].o.forced = {11, 2000, 35, 9, 151, 7000, 12};
  reqs[3].stop_after = 4;
  reqs[4].o.n_predict = 40;  // runs into the context (n_ctx 96 is not reached: 40 + 14 rows)

  std::vector<Seen> alone(reqs.size());
  std::vector<GenerateResult> alone_r;
  for (size_t i = 0; i < reqs.size(); ++i) {
    Session s(m, so, pool);
    alone_r.push_back(generate(s, tk, reqs[i].prompt, reqs[i].o, callbacks(alone[i], reqs[i].stop_after)));
  }

  std::vector<std::unique_ptr<Session>> ss;
  for (size_t i = 0; i < reqs.size() + 1; ++i) ss.push_back(std::make_unique<Session>(m, so, pool));
  std::vector<Seen> batched(reqs.size() + 1);
  std::vector<GenerateCallbacks> cbs;
  for (size_t i = 0; i < reqs.size(); ++i) cbs.push_back(callbacks(batched[i], reqs[i].stop_after));
  cbs.push_back(callbacks(batched.back(), -1));
  Scheduler sched(m, tk, 8, ss[0]->attention_scratch_per_worker(), pool);
  std::vector<int> ids;
  ids.push_back(sched.add(*ss[0], reqs[0].prompt, reqs[0].o, cbs[0]));
  ids.push_back(sched.add(*ss[1], reqs[1].prompt, reqs[1].o, cbs[1]));
  GenerateOptions long_run;
  long_run.n_predict = 50, long_run.ignore_eos = true;
  const int victim = sched.add(*ss[5], reqs[0].prompt, long_run, cbs[5]);
  CHECK_THROWS_AS(sched.add(*ss[0], reqs[0].prompt, reqs[0].o, cbs[0]), Error);  // the session is busy
  for (int k = 0; k < 5; ++k) CHECK(sched.step());
  ids.push_back(sched.add(*ss[2], reqs[2].prompt, reqs[2].o, cbs[2]));
  for (int k = 0; k < 3; ++k) CHECK(sched.step());
  sched.cancel(victim);
  ids.push_back(sched.add(*ss[3], reqs[3].prompt, reqs[3].o, cbs[3]));
  ids.push_back(sched.add(*ss[4], reqs[4].prompt, reqs[4].o, cbs[4]));
  sched.run();
  CHECK_FALSE(sched.step());
  for (size_t i = 0; i < reqs.size(); ++i) {
    CAPTURE(i);
    CHECK(sched.done(ids[i]));
    CHECK(sched.result(ids[i]).generated == alone_r[i].generated);
    CHECK(sched.result(ids[i]).n_decoded == alone_r[i].n_decoded);
    CHECK(batched[i].ids == alone[i].ids);
    CHECK(batched[i].text == alone[i].text);
    CHECK(batched[i].logits == alone[i].logits);
  }
  CHECK(sched.done(victim));
  CHECK(sched.result(victim).generated.size() < 50);
}

}  // TEST_SUITE
