// `ckjit logits`: inspects and compares --dump-logits trajectories (float32 [steps][n_vocab]).
//   ckjit logits A.f32 --vocab V --compare B.f32 [--margin T] [--json [--per-step]]   A (candidate) vs B (reference)
//   ckjit logits A.f32 --vocab V --top K [--with B.f32]                  per step: top K as JSON
// --per-step adds, per step, the full-vocabulary cosine and max |A - B|, both top-1 ids and B's top-2
// margin; --with adds B's logit at each of A's top K ids ([id, a, b] instead of [id, a]).
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>

#include "runtime/error.h"
#include "runtime/json.h"
#include "runtime/logits_compare.h"
#include "tools/command.h"

namespace po = boost::program_options;

static int logits_main(const std::vector<std::string>& args) {
  po::options_description opts("ckjit logits options");
  opts.add_options()
      ("file", po::value<std::string>(), "logits file (float32 [steps][n_vocab])")
      ("vocab", po::value<int64_t>()->default_value(151936), "n_vocab (row length)")
      ("compare", po::value<std::string>(), "reference logits file")
      ("margin", po::value<float>()->default_value(0.05f), "top-1 must agree where the reference's top-2 margin exceeds this")
      ("top", po::value<int>(), "print each step's top K (id, logit) as JSON")
      ("with", po::value<std::string>(), "with --top: also this file's logit at each of those ids")
      ("json", "machine-readable comparison")
      ("per-step", "with --compare --json: per-step cosine, max |diff|, top-1 ids and reference margin")
      ("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help") || !vm.count("file")) {
    std::cout << "usage: ckjit logits A.f32 [--vocab V] (--compare B.f32 [--margin T] | --top K)\n" << opts;
    return vm.count("help") ? 0 : 1;
  }
  const int64_t V = vm["vocab"].as<int64_t>();
  const std::vector<float> a = ckjit::read_logits_file(vm["file"].as<std::string>(), V);
  if (vm.count("top")) {
    const int k = vm["top"].as<int>();
    if (k < 1) throw ckjit::Error("--top must be at least 1");
    std::vector<float> b;
    if (vm.count("with")) {
      b = ckjit::read_logits_file(vm["with"].as<std::string>(), V);
      if (b.size() != a.size()) throw ckjit::Error("--with: the two files have different numbers of steps");
    }
    ckjit::OrderedJson j = ckjit::OrderedJson::array();
    for (size_t s = 0; s < a.size() / size_t(V); ++s) {
      ckjit::OrderedJson step = ckjit::OrderedJson::array();
      for (auto& [id, v] : ckjit::top_k_logits(std::span(a).subspan(s * size_t(V), size_t(V)), k)) {
        ckjit::OrderedJson e = {id, double(v)};
        if (!b.empty()) e.push_back(double(b[s * size_t(V) + size_t(id)]));
        step.push_back(std::move(e));
      }
      j.push_back(std::move(step));
    }
    std::cout << ckjit::dump_json(j) << "\n";
    return 0;
  }
  if (!vm.count("compare")) throw ckjit::Error("give --compare B.f32 or --top K");
  const std::vector<float> b = ckjit::read_logits_file(vm["compare"].as<std::string>(), V);
  const float thr = vm["margin"].as<float>();
  const ckjit::TrajectoryDiff d = ckjit::compare_trajectories(a, b, V, thr);
  if (vm.count("json")) {
    ckjit::OrderedJson j = {{"steps", d.steps}, {"cos_min", d.cos_min}, {"cos_mean", d.cos_mean}, {"cos_min_step", d.cos_min_step},
                            {"margin", double(thr)}, {"clear_steps", d.clear_steps}, {"clear_agree", d.clear_agree},
                            {"top1_agree", d.all_agree}, {"max_abs_diff", double(d.max_abs)}, {"disagreements", d.disagreements}};
    if (vm.count("per-step")) {
      auto doubles = [](const auto& v) { return std::vector<double>(v.begin(), v.end()); };
      j["step_cos"] = d.step_cos;
      j["step_max_abs"] = doubles(d.step_max_abs);
      j["step_top1"] = d.step_top1_a;
      j["step_ref_top1"] = d.step_top1_b;
      j["step_ref_margin"] = doubles(d.step_margin_b);
    }
    std::cout << ckjit::dump_json(j) << "\n";
  } else {
    std::printf("steps %lld | cosine min %.7f (step %lld) mean %.7f | top-1 agree %lld/%lld, where margin > %g: %lld/%lld | max |diff| %.4g\n",
                (long long)d.steps, d.cos_min, (long long)d.cos_min_step, d.cos_mean, (long long)d.all_agree,
                (long long)d.steps, thr, (long long)d.clear_agree, (long long)d.clear_steps, d.max_abs);
  }
  return 0;
}

static ckjit::cli::Register reg("logits", "compare or summarise --dump-logits trajectories", logits_main);
