// Planner and cost model: blocks fit the caches the plan reports (recomputed here from the
// tiling), register blocks fit the ISA's registers, the CPU budget (quota, cpuset) is respected,
// and the choices follow the cost model's logic (sync cost for tiny ops, DRAM for decode).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "jit/kernel_spec.h"
#include "jit/planner/planner.h"
#include "planner_test_machines.h"
#include "runtime/error.h"
#include "jit/planner/profile.h"

using namespace ckjit;
using namespace ckjit::planner;

namespace {

std::vector<OpShape> shapes_to_plan() {
  std::vector<OpShape> v;
  for (TensorType w : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::F32, TensorType::BF16,
                       TensorType::F16, TensorType::Q2_K}) {
    int64_t kb = tensor_type_info(w).block_elems;
    v.push_back({OpKind::gemv, w, 1, 4096, 4096});
    v.push_back({OpKind::gemm, w, 1028, 4096, 4096});
    v.push_back({OpKind::gate_up_swiglu, w, 1028, 12288, 4096});
    v.push_back({OpKind::gemm, w, 7, 33, kb * 3});        // odd, tiny
    v.push_back({OpKind::gemm, w, 300, 151936, 4096});   // LM head during prefill
    v.push_back({OpKind::gemm, w, 17, 1000, kb * 129});  // deep K
  }
  return v;
}

// Independent re-computation of what must fit where, from the tiling and the type table.
void check_plan_fits(const Plan& p, const topo::Machine& m) {
  const Tiling& t = p.tiling;
  const auto& info = tensor_type_info(p.shape.wtype);
  const double wb = double(info.block_bytes) / double(info.block_elems) * p.shape.weight_matrices();
  INFO(p.shape.key() << " -> " << t.describe());
  // The plan sized its blocks for this machine's caches, not for constants.
  CHECK(p.caches.l1 == m.cache_bytes(1));
  CHECK(p.caches.l2 == m.cache_bytes(2));
  CHECK(p.caches.l3 == m.cache_bytes(3));
  const int nr_vec = t.nr / p.kernel.lanes;
  if (p.kernel.jit) {
    // JIT kernels: one quant block per stream and row in L1, sums in registers over all of K;
    // the tile's activation rows and one column group in L2 (unless even mc = mr cannot fit).
    const double grain = double(info.block_elems);
    // Bytes of the repacked panels the kernels read (jit/packed_weights.h), per element.
    const double packed = p.shape.wtype == TensorType::Q4_K ? 148.0 / 256
                          : p.shape.wtype == TensorType::Q8_0 ? 40.0 / 32 : 280.0 / 256;
    CHECK(p.kernel.weight_bytes == doctest::Approx(packed));
    const double wb = packed * p.shape.weight_matrices();
    const double l1 = grain * (t.nr * wb + t.mr * p.kernel.act_bytes);
    const double l2 = double(p.shape.k) * (t.nr * wb + double(t.mc) * p.kernel.act_bytes);
    CHECK(l1 <= double(m.cache_bytes(1)));
    CHECK((l2 <= double(m.cache_bytes(2)) || t.mc == t.mr));
    CHECK(p.cost.fp.l1 == doctest::Approx(l1));
    CHECK(p.cost.fp.l2 == doctest::Approx(l2));
    CHECK(t.kc == (p.shape.k + info.block_elems - 1) / info.block_elems * info.block_elems);
    const auto op = p.shape.kind == OpKind::gate_up_swiglu ? jit::Op::SwiGLU : jit::Op::Gemm;
    CHECK(jit::register_block_problem(p.kernel.jit_isa, op, t.mr, nr_vec * p.shape.weight_matrices()) == "");
  } else {
    const double l1_panels = double(t.kc) * (t.nr * wb + t.mr * p.kernel.act_bytes);
    CHECK(l1_panels <= double(m.cache_bytes(1)));
    const double l2_block = double(t.kc) * (double(t.nc) * wb + double(t.mc) * p.kernel.act_bytes) +
                            double(t.mc) * double(t.nc) * 4;
    CHECK(l2_block <= double(m.cache_bytes(2)));
    CHECK(p.cost.fp.l1 == doctest::Approx(l1_panels));
    CHECK(p.cost.fp.l2 == doctest::Approx(l2_block));
    // The register tile fits the vector registers.
    CHECK(t.mr * nr_vec + nr_vec + 1 + p.kernel.reserved_regs <= p.kernel.vector_regs);
  }
  // Blocks are whole quant blocks along K and whole register tiles along M and N.
  CHECK(t.kc % info.block_elems == 0);
  CHECK(t.mc % t.mr == 0);
  CHECK(t.nc % t.nr == 0);
  CHECK(t.nr % p.kernel.lanes == 0);
  // Threads and cpus within the budget.
  CpuBudget b = cpu_budget(m);
  CHECK(t.threads >= 1);
  CHECK(t.threads <= b.max_threads);
  CHECK(int(p.cpus.size()) == t.threads);
  std::set<int> distinct(p.cpus.begin(), p.cpus.end());
  CHECK(distinct.size() == p.cpus.size());
  for (int c : p.cpus) CHECK(std::binary_search(b.cpus.begin(), b.cpus.end(), c));
  CHECK(p.cost.total_us > 0);
  CHECK(!p.reasons.empty());
}

}  // namespace

TEST_SUITE("planner") {

TEST_CASE("blocks fit the caches of the machine they were planned for") {
  for (auto caches : {std::array<std::size_t, 3>{32 << 10, 1 << 20, 32 << 20},
                      std::array<std::size_t, 3>{48 << 10, 2 << 20, 105 << 20},
                      std::array<std::size_t, 3>{16 << 10, 256 << 10, 4 << 20}}) {
    auto m = test::synthetic_machine(8, 2, caches[0], caches[1], caches[2]);
    for (const auto& s : shapes_to_plan()) check_plan_fits(plan_op(s, m), m);
  }
}

TEST_CASE("AVX2-only machines get tiles for 16 registers of 8 lanes") {
  auto m = test::synthetic_machine(4, 1, 32 << 10, 512 << 10, 16 << 20, /*avx512=*/false);
  for (const auto& s : shapes_to_plan()) {
    Plan p = plan_op(s, m);
    CHECK(p.kernel.vector_regs == 16);
    CHECK(p.kernel.lanes == 8);
    check_plan_fits(p, m);
  }
}

TEST_CASE("AVX-VNNI machines without AVX-512 get avxvnni kernels (VEX) in the ymm register budget") {
  auto m = test::synthetic_machine(4, 1, 48 << 10, 1280 << 10, 24 << 20, /*avx512=*/false);
  m.isa.avx_vnni = m.isa_detected.avx_vnni = true;  // e.g. Alder Lake P-cores
  for (const auto& s : shapes_to_plan()) {
    Plan p = plan_op(s, m);
    if (!p.kernel.jit) continue;
    CHECK(p.kernel.jit_isa == jit::IsaPath::AvxVnni);
    CHECK(p.kernel.lanes == 8);
    check_plan_fits(p, m);
    jit::KernelSpec spec = jit_spec_for(p);
    CHECK(spec.isa == jit::IsaPath::AvxVnni);
    CHECK(spec.enc == jit::VnniEncoding::Vex);
  }
}

TEST_CASE("bigger caches allow deeper blocks") {
  OpShape s{OpKind::gemm, TensorType::Q4_K, 512, 8192, 8192};
  auto small = test::synthetic_machine(4, 1, 16 << 10, 256 << 10, 8 << 20);
  auto big = test::synthetic_machine(4, 1, 64 << 10, 2 << 20, 64 << 20);
  Plan ps = plan_op(s, small), pb = plan_op(s, big);
  CHECK(ps.cost.fp.l1 <= 16 << 10);
  CHECK(pb.cost.fp.l2 > ps.cost.fp.l2);
}

TEST_CASE("register block candidates follow the ISA's register count") {
  topo::Isa avx512;
  avx512.avx2 = avx512.avx512f = avx512.avx512bw = avx512.avx512vnni = true;
  for (const auto& rb : register_block_candidates(kernel_traits(avx512, TensorType::Q2_K))) {
    CHECK(rb.nr % 16 == 0);
    CHECK(rb.mr * (rb.nr / 16) + rb.nr / 16 + 1 + 3 <= 32);
  }
  topo::Isa avx2;
  avx2.avx2 = avx2.fma = true;
  auto c = register_block_candidates(kernel_traits(avx2, TensorType::F32));
  REQUIRE(!c.empty());
  for (const auto& rb : c) CHECK(rb.mr * (rb.nr / 8) + rb.nr / 8 + 1 + 1 <= 16);
}

TEST_CASE("the quota caps the threads the plan uses (floor of the quota)") {
  auto m = test::synthetic_machine(8, 2, 32 << 10, 1 << 20, 32 << 20);
  m.cgroup.quota = topo::CpuQuota{350000, 100000};  // 3.5 CPUs
  OpShape s{OpKind::gate_up_swiglu, TensorType::Q4_K, 1028, 12288, 4096};
  Plan p = plan_op(s, m);
  CHECK(p.tiling.threads <= 3);
  CHECK(p.tiling.threads >= 2);  // compute-bound: more threads help up to the budget
  bool says_quota = false;
  for (const auto& r : p.reasons) says_quota |= r.find("quota") != std::string::npos;
  CHECK(says_quota);
  PlannerOptions exact;
  exact.exact_threads = 8;
  CHECK(plan_op(s, m, exact).tiling.threads == 3);
}

TEST_CASE("the cpuset decides which cpus the plan names") {
  auto m = test::synthetic_machine(4, 2, 32 << 10, 1 << 20, 32 << 20);
  m.cgroup.cpuset = std::vector<int>{1, 2, 5};
  OpShape s{OpKind::gemm, TensorType::Q8_0, 1028, 4096, 4096};
  Plan p = plan_op(s, m);
  for (int c : p.cpus) CHECK((c == 1 || c == 2 || c == 5));
  CHECK(p.tiling.threads <= 2);  // cpus 1 and 5 are SMT siblings of one core: no SMT by default
}

TEST_CASE("more threads is not always faster: a tiny op stays on one thread") {
  auto m = test::synthetic_machine(16, 1, 32 << 10, 1 << 20, 32 << 20);
  Plan tiny = plan_op({OpKind::gemv, TensorType::Q8_0, 1, 64, 256}, m);
  CHECK(tiny.tiling.threads == 1);
  Plan big = plan_op({OpKind::gemm, TensorType::Q4_K, 1028, 12288, 4096}, m);
  CHECK(big.tiling.threads == 16);
  CHECK(big.cost.bound == "compute");
}

TEST_CASE("decode is DRAM-bound and the thread count saturates with DRAM bandwidth") {
  auto m = test::synthetic_machine(32, 1, 32 << 10, 1 << 20, 32 << 20);
  PeakRates peaks = default_peak_rates(m);
  PlannerOptions o;
  o.peaks = peaks;
  Plan p = plan_op({OpKind::gemv, TensorType::Q4_K, 1, 12288, 4096}, m, o);
  CHECK(p.cost.bound == "DRAM");
  // Threads beyond dram_gbps / dram_gbps_per_core add nothing; the planner stops near there.
  int saturating = int(std::ceil(peaks.dram_gbps / peaks.dram_gbps_per_core));
  CHECK(p.tiling.threads <= saturating + 1);
  CHECK(p.tiling.threads < 32);
}

TEST_CASE("measured peaks change the plan's expectations") {
  auto m = test::synthetic_machine(4, 1, 32 << 10, 1 << 20, 32 << 20);
  OpShape s{OpKind::gemv, TensorType::Q4_K, 1, 4096, 4096};
  PlannerOptions slow;
  slow.peaks = default_peak_rates(m);
  slow.peaks->dram_gbps /= 4;
  slow.peaks->dram_gbps_per_core /= 4;
  CHECK(plan_op(s, m, slow).cost.total_us > plan_op(s, m).cost.total_us * 2);
}

TEST_CASE("candidates: the model's pick first then one per thread count and all distinct") {
  auto m = test::synthetic_machine(4, 1, 32 << 10, 1 << 20, 32 << 20);
  OpShape s{OpKind::gate_up_swiglu, TensorType::Q4_K, 64, 512, 1024};
  auto c = plan_candidates(s, m, {}, 8);
  REQUIRE(c.size() >= 4);
  CHECK(c.size() <= 8);
  CHECK(c[0].tiling == plan_op(s, m).tiling);
  std::set<int> threads;
  for (std::size_t i = 0; i < c.size(); ++i) {
    threads.insert(c[i].tiling.threads);
    for (std::size_t j = 0; j < i; ++j) CHECK_FALSE(c[i].tiling == c[j].tiling);
    check_plan_fits(c[i], m);
  }
  CHECK(threads.size() == 4);
}

TEST_CASE("a profile entry overrides the model unless the budget no longer allows it") {
  auto m = test::synthetic_machine(4, 1, 32 << 10, 1 << 20, 32 << 20);
  OpShape s{OpKind::gemm, TensorType::Q4_K, 64, 512, 1024};
  ProfileEntry e;
  e.shape = s;
  e.runner = "test";
  e.best.tiling = Tiling{3, false, 4, 32, 8, 64, 256, LoopOrder::m_n_k, SplitAxis::m};
  e.best.median_us = 10;
  Plan p = plan_with_profile(s, m, &e, "/x/profile.json");
  CHECK(p.tiling == e.best.tiling);
  CHECK(p.source == "profile /x/profile.json");
  CHECK(p.cpus.size() == 3);

  m.cgroup.quota = topo::CpuQuota{200000, 100000};  // now only 2 threads
  Plan q = plan_with_profile(s, m, &e, "/x/profile.json");
  CHECK(q.source == "cost model");
  CHECK(q.tiling.threads <= 2);
  CHECK(q.reasons.front().find("profile entry not used") != std::string::npos);
}

TEST_CASE("bad shapes are errors and not crashes") {
  auto m = test::synthetic_machine(2, 1, 32 << 10, 1 << 20, 32 << 20);
  CHECK_THROWS_AS(plan_op({OpKind::gemm, TensorType::Q4_K, 0, 10, 256}, m), Error);
  CHECK_THROWS_AS(plan_op({OpKind::gemm, TensorType::Q4_K, 4, 10, 100}, m), Error);  // K not a block multiple
  CHECK_THROWS_AS(plan_op({OpKind::gemv, TensorType::Q8_0, 2, 10, 64}, m), Error);    // gemv has M = 1
  CHECK_THROWS_AS(parse_op_shape("gate_up:1x2", TensorType::Q4_K), Error);
  CHECK_THROWS_AS(parse_op_shape("conv:1x2x256", TensorType::Q4_K), Error);
  CHECK_THROWS_AS(parse_op_shape("gemm:1x2x256:q9_k", TensorType::Q4_K), Error);
  OpShape ok = parse_op_shape("gate_up:1028x12288x4096:q6_k", TensorType::Q4_K);
  CHECK(ok == OpShape{OpKind::gate_up_swiglu, TensorType::Q6_K, 1028, 12288, 4096});
}

TEST_CASE("plan JSON is valid and carries the tiling") {
  auto m = test::synthetic_machine(2, 1, 32 << 10, 1 << 20, 32 << 20);
  Plan p = plan_op({OpKind::gemm, TensorType::Q4_K, 16, 256, 512}, m);
  std::string j = p.to_json();
  CHECK(j.find("\"mr\":" + std::to_string(p.tiling.mr)) != std::string::npos);
  CHECK(j.find("\"bound\":\"" + p.cost.bound + "\"") != std::string::npos);
}

}  // TEST_SUITE
