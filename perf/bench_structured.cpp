// What structured output costs per decoded token: the same model, prompt and sampler (temperature
// 1, llama.cpp's defaults otherwise) generating free text and JSON under a schema, in alternated
// runs; the wall time of the decode loop (decode + sampling + masks) per token, medians.
//   bench_structured MODEL [--tokens N] [--runs R] [--schema FILE] [--threads T]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pair/context.h"
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_structured MODEL [--tokens N] [--runs R] [--schema FILE] [--threads T]\n");
    return 2;
  }
  std::string model_path = argv[1], schema = kSchema;
  int tokens = 64, runs = 3, threads = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--tokens") tokens = std::atoi(v.c_str());
    else if (a == "--runs") runs = std::atoi(v.c_str());
    else if (a == "--threads") threads = std::atoi(v.c_str());
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
  std::printf("machine: %s\nmodel: %s | threads %d | %d tokens per run, median of %d alternated runs | load average %.2f %.2f %.2f\n",
              model->machine().name().c_str(), model_path.c_str(), model->threads(), tokens, runs, la[0], la[1], la[2]);
  const auto t0 = std::chrono::steady_clock::now();
  const auto grammar = model->json_grammar(schema, "bench schema");
  std::printf("schema compiled (and the vocabulary sorted, once per model) in %.1f ms\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  ckjit::pair::ContextOptions co;
  co.n_ctx = 1024;
  ckjit::pair::Context ctx(model, co);
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
