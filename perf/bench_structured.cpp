// What structured output costs per decoded token: the same model, prompt and sampler (temperature
// 1, llama.cpp's defaults otherwise) generating free text and JSON under a schema, in alternated
// runs; the wall time of the decode loop (decode + sampling + masks) per token, medians.
// --validate N instead samples N answers (temperature 1, seeds 1..N, up to --tokens each) and checks
// that every finished one parses and validates (tests/unit/json_schema_check.h, apart from the compiler).
//   bench_structured MODEL [--tokens N] [--runs R] [--schema FILE] [--threads T] [--validate N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pair/context.h"
#include "tests/unit/json_schema_check.h"
#include "pair/model.h"
#include "topology/machine.h"

namespace {

const char* kSchema = R"({"type":"object","properties":{
  "vendor":{"type":"string","maxLength":40},"date":{"type":"string","maxLength":10},"total":{"type":"number"},
  "currency":{"enum":["EUR","USD","CHF"]},
  "lines":{"type":"array","maxItems":8,"items":{"type":"object","properties":{"item":{"type":"string","maxLength":30},
    "qty":{"type":"integer"},"price":{"type":"number"}},"required":["item","qty","price"]}}},
  "required":["vendor","date","total","currency","lines"]})";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

ckjit::graph::GenerateResult sample(ckjit::pair::Context& ctx, const ckjit::graph::GenerateOptions& o) {
  ctx.reset();
  ckjit::pair::Prompt p;
  p.chat = true;
  p.add_text("Read the receipt and answer in JSON.");
  return ctx.generate(ctx.render(p), o, {});
}

// N answers at temperature 1: every one that ends (end of generation) must parse and validate.
int validate_samples(const std::shared_ptr<const ckjit::pair::Model>& model, ckjit::pair::Context& ctx,
                     const std::shared_ptr<const ckjit::structured::Grammar>& grammar, const std::string& schema_text, int n, int tokens) {
  const schemacheck::Json schema = schemacheck::Json::parse(schema_text);
  int ended = 0, valid = 0, cut = 0;
  size_t total_tokens = 0, longest = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 1; i <= n; ++i) {
    ckjit::graph::GenerateOptions o;
    o.n_predict = tokens;
    o.sampler.temp = 1.0f;
    o.sampler.seed = uint64_t(i);
    o.grammar = grammar;
    const ckjit::graph::GenerateResult r = sample(ctx, o);
    total_tokens += r.generated.size();
    longest = std::max(longest, r.generated.size());
    if (r.stop != ckjit::graph::StopReason::end_of_generation) {
      ++cut;
      continue;
    }
    ++ended;
    std::vector<int32_t> ids(r.generated.begin(), r.generated.end() - 1);
    const std::string text = model->tokenizer().decode(ids);
    const schemacheck::Json v = schemacheck::Json::parse(text, nullptr, false);
    const std::string why = v.is_discarded() ? "does not parse" : schemacheck::why_not(v, schema, schema);
    if (why.empty()) ++valid;
    else std::printf("seed %d: %s: %s\n", i, why.c_str(), text.c_str());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("validate: %d samples at temperature 1 (seeds 1..%d, at most %d tokens): %d ended, %d of them parse and validate, "
              "%d cut at the token limit | %zu tokens (longest %zu) in %.0f s\n",
              n, n, tokens, ended, valid, cut, total_tokens, longest, s);
  return valid == ended ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_structured MODEL [--tokens N] [--runs R] [--schema FILE] [--threads T] [--validate N]\n");
    return 2;
  }
  std::string model_path = argv[1], schema = kSchema;
  int tokens = 64, runs = 3, threads = 0, validate = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--tokens") tokens = std::atoi(v.c_str());
    else if (a == "--runs") runs = std::atoi(v.c_str());
    else if (a == "--threads") threads = std::atoi(v.c_str());
    else if (a == "--validate") validate = std::atoi(v.c_str());
    else if (a == "--schema") {
      std::ifstream f(v);
      std::stringstream ss;
      ss << f.rdbuf();
      schema = ss.str();
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  ckjit::pair::LoadOptions lo;
  lo.model_path = model_path;
  lo.threads = threads;
  const auto model = ckjit::pair::Model::load(lo);
  double la[3] = {};
  getloadavg(la, 3);
  if (validate > 0)
    std::printf("machine: %s\nmodel: %s | threads %d | validate %d samples of at most %d tokens | load average %.2f %.2f %.2f\n",
                model->machine().name().c_str(), model_path.c_str(), model->threads(), validate, tokens, la[0], la[1], la[2]);
  else
    std::printf("machine: %s\nmodel: %s | threads %d | %d tokens per run, median of %d alternated runs | load average %.2f %.2f %.2f\n",
                model->machine().name().c_str(), model_path.c_str(), model->threads(), tokens, runs, la[0], la[1], la[2]);
  const auto t0 = std::chrono::steady_clock::now();
  const auto grammar = model->json_grammar(schema, "bench schema");
  std::printf("schema compiled (and the vocabulary sorted, once per model) in %.1f ms\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  ckjit::pair::ContextOptions co;
  co.n_ctx = 1024;
  ckjit::pair::Context ctx(model, co);
  if (validate > 0) return validate_samples(model, ctx, grammar, schema, validate, tokens);
  std::vector<double> free_ms, json_ms;
  int json_tokens = 0, json_complete = 0;
  for (int r = 0; r < runs; ++r) {
    for (int structured = 0; structured < 2; ++structured) {
      ctx.reset();
      ckjit::pair::Prompt p;
      p.chat = true;
      p.add_text("Read the receipt and answer in JSON.");
      const ckjit::pair::RenderedPrompt rp = ctx.render(p);
      ckjit::graph::GenerateOptions o;
      o.n_predict = tokens;
      o.sampler.temp = 1.0f;
      o.sampler.seed = uint64_t(r + 1);
      o.ignore_eos = !structured;
      if (structured) o.grammar = grammar;
      const auto t = std::chrono::steady_clock::now();
      const ckjit::graph::GenerateResult res = ctx.generate(rp, o, {});
      const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
      const double per = (wall - res.prefill_ms) / std::max(1, int(res.generated.size()));
      (structured ? json_ms : free_ms).push_back(per);
      if (structured) json_tokens += int(res.generated.size()), json_complete += res.stop == ckjit::graph::StopReason::end_of_generation;
    }
  }
  const double f = median(free_ms), j = median(json_ms);
  std::printf("free text: %.2f ms/token | json_schema: %.2f ms/token (%d tokens in %d runs, %d complete) | cost %+.1f%%\n", f, j,
              json_tokens, runs, json_complete, (j / f - 1.0) * 100.0);
  getloadavg(la, 3);
  std::printf("load average after: %.2f %.2f %.2f\n", la[0], la[1], la[2]);
}
