// The tuner with the JIT kernels: the JIT runner computes the op exactly as the kernels' scalar
// twin does under any tiling and thread count; `ckjit tune` measures with it by default and
// writes a profile; `--model` derives prefill and decode shapes from a GGUF's blk.0 weights.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli_run.h"
#include "jit/kernel_spec.h"
#include "jit/planner/jit_runner.h"
#include "jit/planner/model_shapes.h"
#include "jit/planner/planner.h"
#include "planner_test_machines.h"
#include "skip.h"
#include "topology/cpu_budget.h"
#include "runtime/error.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/gguf/gguf_writer.h"
#include "jit/planner/profile.h"
#include "topology/machine.h"

using namespace ckjit;
using namespace ckjit::planner;

namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/ckjit-jittune-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `plan` with the runner on a pool of the plan's cpus and requires the twin's exact bits.
void check_plan(JitRunner& runner, const Plan& plan, const std::vector<float>& expected) {
  INFO(plan.shape.key() << " " << plan.tiling.describe());
  ThreadPool pool(pool_options(cpu_budget(topo::detect_machine()), plan.cpus));
  REQUIRE(pool.size() == plan.tiling.threads);
  runner.run(plan, pool);
  const auto& y = runner.output();
  REQUIRE(y.size() == expected.size());
  CHECK(std::memcmp(y.data(), expected.data(), y.size() * sizeof(float)) == 0);
}

std::vector<uint8_t> zero_tensor(TensorType t, int64_t k, int64_t n) {
  const auto& info = tensor_type_info(t);
  return std::vector<uint8_t>(std::size_t(n * (k / info.block_elems) * info.block_bytes), 0);
}

// A small decoder layout: hidden 256, q 512, kv 32, ffn 512; Q4_K except ffn_down (Q6_K).
void write_small_model(const std::string& path, bool with_up = true) {
  gguf::GgufWriter w;
  w.set_string("general.architecture", "qwen3");
  auto add = [&](const char* name, TensorType t, int64_t k, int64_t n) { w.add_tensor(name, t, {k, n}, zero_tensor(t, k, n)); };
  add("token_embd.weight", TensorType::Q4_K, 256, 100);
  w.add_tensor("blk.0.attn_norm.weight", TensorType::F32, {256}, std::vector<uint8_t>(256 * 4, 0));
  add("blk.0.attn_q.weight", TensorType::Q4_K, 256, 512);
  add("blk.0.attn_k.weight", TensorType::Q4_K, 256, 32);
  add("blk.0.attn_v.weight", TensorType::Q4_K, 256, 32);
  add("blk.0.attn_output.weight", TensorType::Q4_K, 512, 256);
  add("blk.0.ffn_gate.weight", TensorType::Q4_K, 256, 512);
  if (with_up) add("blk.0.ffn_up.weight", TensorType::Q4_K, 256, 512);
  add("blk.0.ffn_down.weight", TensorType::Q6_K, 512, 256);
  add("blk.1.ffn_down.weight", TensorType::Q6_K, 512, 256);
  w.write_file(path);
}

}  // namespace

TEST_SUITE("tuner") {

TEST_CASE("the planner proposes only register blocks the JIT emitters accept") {
  for (bool avx512 : {true, false}) {
    auto m = test::synthetic_machine(2, 1, 32 << 10, 1 << 20, 32 << 20, avx512);
    for (TensorType t : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::Q8_0}) {
      KernelTraits k = kernel_traits(m.isa, t);
      REQUIRE(k.jit);
      for (OpKind kind : {OpKind::gemm, OpKind::gate_up_swiglu}) {
        auto blocks = register_block_candidates(k, kind);
        REQUIRE(!blocks.empty());
        const jit::IsaPath isa = avx512 ? jit::IsaPath::Avx512 : jit::IsaPath::Avx2;
        const jit::Op op = kind == OpKind::gate_up_swiglu ? jit::Op::SwiGLU : jit::Op::Gemm;
        int mats = kind == OpKind::gate_up_swiglu ? 2 : 1;
        for (const auto& rb : blocks) {
          INFO(rb.mr << "x" << rb.nr);
          CHECK(rb.nr % jit::panel_cols(isa) == 0);
          CHECK(jit::register_block_problem(isa, op, rb.mr, rb.nr / jit::panel_cols(isa) * mats) == "");
        }
      }
      // Every plan's spec is emittable.
      OpShape s{OpKind::gate_up_swiglu, t, 64, 512, 1024};
      for (const Plan& p : plan_candidates(s, m, {}, 8)) CHECK_NOTHROW(jit_spec_for(p).validate());
    }
  }
  // The shared rule is what the emitters enforce.
  CHECK(jit::register_block_problem(jit::IsaPath::Avx512, jit::Op::Gemm, 6, 2) == "");
  CHECK(jit::register_block_problem(jit::IsaPath::Avx512, jit::Op::Gemm, 4, 3) == "");
  CHECK(jit::register_block_problem(jit::IsaPath::Avx512, jit::Op::Gemm, 5, 3) != "");
  CHECK(jit::register_block_problem(jit::IsaPath::Avx512, jit::Op::SwiGLU, 6, 1) != "");
  CHECK(jit::register_block_problem(jit::IsaPath::Avx2, jit::Op::Gemm, 2, 2) == "");
  CHECK(jit::register_block_problem(jit::IsaPath::Avx2, jit::Op::Gemm, 3, 2) != "");
  CHECK_THROWS_AS(jit::KernelSpec::parse("op=gemm,w=q4_K,a=q8_K,isa=avx512,mr=5,nr=3,k=256"), Error);
}

TEST_CASE("the JIT runner equals the kernels' scalar twin under every tiling and thread count") {
  JitRunner runner;
  const OpShape probe{OpKind::gemm, TensorType::Q4_K, 2, 16, 256};
  if (!runner.cannot_run(probe).empty()) CKJIT_SKIP(runner.cannot_run(probe));
  auto machine = topo::detect_machine();
  const int max_t = std::min(2, cpu_budget(machine).max_threads);
  const OpShape shapes[] = {
      {OpKind::gemm, TensorType::Q4_K, 37, 80, 512},          {OpKind::gate_up_swiglu, TensorType::Q4_K, 13, 80, 256},
      {OpKind::gemv, TensorType::Q6_K, 1, 48, 512},            {OpKind::gemm, TensorType::Q8_0, 9, 40, 96},
      {OpKind::gate_up_swiglu, TensorType::Q5_K, 7, 64, 512},
  };
  for (const OpShape& s : shapes) {
    runner.prepare(s);
    const std::vector<float> expected = runner.reference_output();
    // The planner's own candidates...
    for (const Plan& p : plan_candidates(s, machine, {}, 6)) check_plan(runner, p, expected);
    // ...and hand-made tilings: odd tiles, both loop orders, both split axes, 1 and 2 threads.
    const int lanes = jit::panel_cols(jit_spec_for(plan_op(s, machine)).isa);
    for (int threads = 1; threads <= max_t; ++threads)
      for (LoopOrder order : {LoopOrder::n_k_m, LoopOrder::m_n_k})
        for (SplitAxis split : {SplitAxis::n, SplitAxis::m}) {
          Tiling t;
          t.threads = threads, t.order = order, t.split = split;
          t.mr = s.m == 1 ? 1 : 2, t.nr = lanes * (s.kind == OpKind::gate_up_swiglu ? 1 : 2);
          t.mc = 5, t.nc = 3 * lanes, t.kc = s.k;
          check_plan(runner, plan_for_tiling(s, t, machine), expected);
        }
  }
  // Plans the kernels cannot run are errors, not crashes.
  Tiling bad;
  bad.mr = 1, bad.nr = 20, bad.nc = 20;  // not a multiple of any panel width
  runner.prepare(shapes[0]);
  ThreadPool pool(ThreadPoolOptions{});
  CHECK_THROWS_AS(runner.run(plan_for_tiling(shapes[0], bad, machine), pool), Error);
  CHECK(runner.cannot_run({OpKind::gemm, TensorType::F32, 2, 16, 64}) != "");
  CHECK_THROWS_AS(runner.prepare({OpKind::gemm, TensorType::F32, 2, 16, 64}), Error);
}

TEST_CASE("ckjit tune measures with the JIT kernels by default and writes a profile") {
  JitRunner probe_runner;
  const std::string why = probe_runner.cannot_run({OpKind::gemm, TensorType::Q4_K, 2, 16, 256});
  if (!why.empty()) CKJIT_SKIP("the JIT kernels do not run here: " << why);
  std::string dir = temp_dir();
  std::string profile = dir + "/p.json";
  auto r = run_ckjit("tune --no-peaks --shape gemm:8x64x256:q4_k --shape gate_up:4x32x512:q8_0 --shape gemv:1x48x256:f32"
                     " --repeats 2 --candidates 3 --profile " + profile);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("runner: jit (generated kernels") != std::string::npos);
  CHECK(r.output.find("gemv:F32:1x48x256: skipped: no JIT kernels for F32") != std::string::npos);
  CHECK(r.output.find("gemm:Q4_K:8x64x256: best") != std::string::npos);
  CHECK(r.output.find("gate_up_swiglu:Q8_0:4x32x512: best") != std::string::npos);
  const std::string text = read_all(profile);
  CHECK(text.find("jit (generated kernels") != std::string::npos);
  CHECK(text.find("gemm:Q4_K:8x64x256") != std::string::npos);
  CHECK(text.find("rejected") != std::string::npos);
  auto bad = run_ckjit("tune --no-peaks --runner fast --shape gemm:8x64x256:q4_k --profile " + profile);
  CHECK(bad.status == 1);
  CHECK(bad.output.find("--runner must be jit or reference") != std::string::npos);
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("model shapes come from blk.0's weights: prefill GEMMs / decode GEMVs / gate+up fused") {
  std::string dir = temp_dir();
  write_small_model(dir + "/m.gguf");
  auto f = gguf::GgufFile::open(dir + "/m.gguf");
  auto shapes = model_op_shapes(f, 16);
  std::vector<std::string> keys;
  for (const auto& s : shapes) keys.push_back(s.shape.key());
  const std::vector<std::string> expected = {
      "gemm:Q4_K:16x512x256",  "gemm:Q4_K:16x32x256",          "gemm:Q4_K:16x256x512", "gate_up_swiglu:Q4_K:16x512x256",
      "gemm:Q6_K:16x256x512",  "gemv:Q4_K:1x512x256",          "gemv:Q4_K:1x32x256",   "gemv:Q4_K:1x256x512",
      "gate_up_swiglu:Q4_K:1x512x256", "gemv:Q6_K:1x256x512"};
  CHECK(keys == expected);
  CHECK(shapes[1].tensors == "blk.0.attn_k.weight, blk.0.attn_v.weight");
  CHECK(shapes[3].tensors == "blk.0.ffn_gate.weight+blk.0.ffn_up.weight");
  CHECK_THROWS_AS(model_op_shapes(f, 0), Error);

  // The CLI lists them and tunes them (reference runner: quick).
  auto r = run_ckjit("tune --model " + dir + "/m.gguf --prefill-rows 16 --runner reference --no-peaks --repeats 1"
                     " --candidates 1 --profile " + dir + "/p.json");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("10 op shapes") != std::string::npos);
  for (const auto& k : expected) CHECK(r.output.find("  " + k + "  (") != std::string::npos);
  CHECK(read_all(dir + "/p.json").find("gate_up_swiglu:Q4_K:1x512x256") != std::string::npos);

  // Bad files are errors with a message, never crashes.
  write_small_model(dir + "/no_up.gguf", false);
  CHECK_THROWS_AS(model_op_shapes(gguf::GgufFile::open(dir + "/no_up.gguf"), 16), Error);
  {
    std::ofstream g(dir + "/junk.gguf");
    g << "not a gguf file at all";
  }
  for (const char* name : {"no_up.gguf", "junk.gguf", "missing.gguf"}) {
    auto e = run_ckjit(std::string("tune --no-peaks --model ") + dir + "/" + name + " --profile " + dir + "/q.json");
    INFO(name << ": " << e.output);
    CHECK(e.status == 1);
    CHECK(e.output.find("error") != std::string::npos);
  }
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // TEST_SUITE
