// Aggregate decode speed of N sequences stepped together (graph::BatchedDecoder) against one
// sequence decoding alone, on a real model file: each sequence is prefilled with its own prompt,
// then `steps` decode steps run (teacher-forced ids), alone and in steps of N. Prints tokens/s per
// N and the ratio to a single stream; medians of alternated runs. --profile N adds one more run
// of N streams with the op profile attached and prints where its steps' time went (graph ops).
//   bench_batched_decode MODEL.gguf [--streams 1,2,4,8] [--steps 32] [--prompt 64] [--runs 3] [-t 2] [-c CTX] [--profile N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "graph/batched_decode.h"
#include "graph/session.h"
#include "graph/text_model.h"
#include "runtime/op_profile.h"
#include "runtime/gguf/gguf_reader.h"
#include "topology/machine.h"
#include "topology/workers.h"

using namespace ckjit;
using namespace ckjit::graph;

namespace {

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Tokens per second of `n` sequences over `steps` decode steps (after their prefills, untimed).
double run(const TextModel& m, Workers& pool, int n, int steps, int prompt, int64_t n_ctx, OpProfile* profile = nullptr) {
  SessionOptions so;
  so.n_ctx = n_ctx;
  std::vector<std::unique_ptr<Session>> ss;
  for (int i = 0; i < n; ++i) {
    ss.push_back(std::make_unique<Session>(m, so, pool));
    std::vector<int32_t> p;
    for (int j = 0; j < prompt; ++j) p.push_back(int32_t(1000 + (97 * i + 31 * j) % 20000));
    ss.back()->decode(Batch::text(p, 0));
  }
  BatchedDecoder dec(m, n, ss[0]->attention_scratch_per_worker(), pool);
  if (profile) {
    profile->set_phase(Phase::decode);
    dec.set_profile(profile);
    ss[0]->set_profile(profile);
  }
  std::vector<Session*> sp;
  for (auto& s : ss) sp.push_back(s.get());
  std::vector<int32_t> tok(static_cast<size_t>(n));
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < n; ++i) tok[size_t(i)] = int32_t(2000 + (13 * i + 7 * t) % 20000);
    if (n == 1) {
      Batch b;
      b.add_token(tok[0], Position::text(sp[0]->next_position()), true);
      sp[0]->decode(b);
    } else {
      dec.step(sp, tok);
    }
  }
  return double(n) * steps / seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_batched_decode MODEL.gguf [--streams 1,2,4,8] [--steps 32] [--prompt 64] [--runs 3] [-t 2] [-c CTX]\n");
    return 2;
  }
  const std::string model = argv[1];
  std::vector<int> streams = {1, 2, 4, 8};
  int steps = 32, prompt = 64, runs = 3, threads = 2, profile_streams = 0;
  int64_t ctx = 0;  // 0: prompt + steps + 16
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--streams") {
      streams.clear();
      std::stringstream ss(next());
      for (std::string x; std::getline(ss, x, ',');) streams.push_back(std::max(1, std::atoi(x.c_str())));
    } else if (a == "--steps") steps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--prompt") prompt = std::max(1, std::atoi(next().c_str()));
    else if (a == "--runs") runs = std::max(1, std::atoi(next().c_str()));
    else if (a == "-t") threads = std::max(1, std::atoi(next().c_str()));
    else if (a == "-c") ctx = std::max(1, std::atoi(next().c_str()));
    else if (a == "--profile") profile_streams = std::max(1, std::atoi(next().c_str()));
    else {
      std::fprintf(stderr, "bench_batched_decode: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  const topo::Machine mach = topo::detect_machine();
  std::printf("machine: %s\nmodel: %s | threads %d | prompt %d tokens per sequence, %d decode steps, median of %d alternated runs | load average %s\n",
              mach.name().c_str(), model.c_str(), threads, prompt, steps, runs, loadavg().c_str());
  const gguf::GgufFile f = gguf::GgufFile::open(model);
  Workers pool(threads);
  const TextModel m(f, ModelOptions{}, pool);
  std::vector<std::vector<double>> tps(streams.size());
  for (int r = 0; r < runs; ++r)
    for (size_t i = 0; i < streams.size(); ++i) tps[i].push_back(run(m, pool, streams[i], steps, prompt, ctx ? ctx : prompt + steps + 16));
  double single = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    std::sort(tps[i].begin(), tps[i].end());
    const double med = tps[i][tps[i].size() / 2];
    if (streams[i] == 1) single = med;
    std::printf("streams %2d: %7.2f tok/s aggregate (min %.2f, max %.2f)", streams[i], med, tps[i].front(), tps[i].back());
    if (single > 0) std::printf(" = %.2fx one stream", med / single);
    std::printf("\n");
  }
  if (profile_streams > 0) {
    OpProfile prof;
    const double t = run(m, pool, profile_streams, steps, prompt, ctx ? ctx : prompt + steps + 16, &prof);
    std::printf("profiled run, %d streams: %.2f tok/s\n", profile_streams, t);
    for (const std::string& line : prof.report()) std::printf("%s\n", line.c_str());
  }
  std::printf("load average after: %s\n", loadavg().c_str());
  return 0;
}
