#include "jit/planner/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "runtime/error.h"
#include "runtime/json.h"
#include "jit/planner/profile.h"

namespace ckjit::planner {
namespace {

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}
std::string human_bytes(double b) {
  if (b >= 1e9) return fmt("%.2f GB", b / 1e9);
  if (b >= 1e6) return fmt("%.1f MB", b / 1e6);
  if (b >= 1e3) return fmt("%.1f KB", b / 1e3);
  return fmt("%.0f B", b);
}
std::string human_us(double us) {
  if (us >= 1e6) return fmt("%.2f s", us / 1e6);
  if (us >= 1e3) return fmt("%.2f ms", us / 1e3);
  return fmt("%.1f us", us);
}
std::string kib(std::size_t b) { return b >= (1u << 20) ? std::to_string(b >> 20) + "M" : std::to_string(b >> 10) + "K"; }

// K granularity: the weight type's block (a kernel never splits a quant block).
int64_t k_grain(TensorType w) { return std::max<int64_t>(tensor_type_info(w).block_elems, 16); }

struct Context {
  OpShape shape;
  KernelTraits kernel;
  CacheSizes caches;
  PeakRates peaks;
  CpuBudget budget;
  int max_threads = 1;
};

// amx: plan for AMX tiles where the machine has them and the op has a tile's rows. Only a tuned
// profile's AMX tiling (mr = kAmxTileRows) or a tune candidate asks for them: the cost model's own
// pick is the AVX-512 kernels of the same panels, measured faster than the AMX ones (Gate-Up
// SwiGLU, 2 threads: 1.25x on Sapphire and Emerald Rapids at the 2B shape, 1.40x at the 8B one;
// at 16 threads within 6% either way: perf/RESULTS.md), since the K-quant AMX kernels stage weight
// tiles and per-block scales through memory.
Context make_context(const OpShape& shape, const topo::Machine& m, const PlannerOptions& opts, bool amx = false) {
  validate(shape);
  Context c;
  c.shape = shape;
  c.kernel = kernel_traits(m.isa, shape.wtype);
  if (c.kernel.jit && c.kernel.jit_isa == jit::IsaPath::Amx && !(amx && jit::amx_serves_rows(shape.m))) {
    topo::Isa no_amx = m.isa;
    no_amx.amx_usable = no_amx.amx_int8 = no_amx.amx_tile = no_amx.amx_bf16 = false;
    c.kernel = kernel_traits(no_amx, shape.wtype);
  }
  c.caches = cache_sizes(m);
  c.peaks = opts.peaks ? *opts.peaks : default_peak_rates(m);
  c.budget = cpu_budget(m);
  int physical = int(c.budget.cores.size());
  c.caches.physical_cores = std::max(1, physical);
  c.max_threads = std::min(c.budget.max_threads, opts.allow_smt ? int(c.budget.cpus.size()) : physical);
  if (opts.max_threads > 0) c.max_threads = std::min(c.max_threads, opts.max_threads);
  c.max_threads = std::max(1, c.max_threads);
  return c;
}

// Deepest kc (a multiple of the weight block) whose L1 micro-panels fit half of L1; at least one
// block if that still fits the whole L1, else 0 (this register block does not fit).
int64_t choose_kc(const Context& c, const RegisterBlock& rb) {
  const double per_k = rb.nr * c.kernel.weight_bytes * c.shape.weight_matrices() + rb.mr * c.kernel.act_bytes;
  const int64_t g = k_grain(c.shape.wtype);
  int64_t kmax = round_up(c.shape.k, g);
  // The JIT kernels run the whole of K with sums in registers, one quant block in L1 at a time.
  if (c.kernel.jit) return per_k * double(g) <= double(c.caches.l1) ? kmax : 0;
  int64_t kc = int64_t(double(c.caches.l1) / 2 / per_k) / g * g;
  if (kc < g) kc = per_k * double(g) <= double(c.caches.l1) ? g : 0;
  return std::min(kc, kmax);
}

std::vector<int64_t> geometric(int64_t unit, int64_t limit) {
  std::vector<int64_t> v;
  for (int64_t x = unit; x < limit; x *= 2) v.push_back(x);
  v.push_back(std::max(unit, round_up(limit, unit)));
  return v;
}

struct Scored {
  Tiling t;
  Cost cost;
};

// Every tiling the model considers for `threads`, scored; blocks that overflow L1/L2 are skipped.
void enumerate(const Context& c, int threads, bool smt, std::vector<Scored>& out) {
  const OpShape& s = c.shape;
  for (const RegisterBlock& rb : register_block_candidates(c.kernel, s.kind)) {
    if (rb.mr > 1 && rb.mr > s.m) continue;  // rows beyond M are only tails (e.g. decode, M = 1)
    int64_t kc = choose_kc(c, rb);
    if (kc == 0) continue;
    // Powers of two of the register block, plus the sizes that give each thread exactly 1, 2 or
    // 4 tasks (balanced splits that powers of two miss, e.g. N = 6144 on 2 threads).
    auto sizes = [&](int64_t unit, int64_t extent) {
      std::vector<int64_t> v = geometric(unit, round_up(extent, unit));
      for (int64_t per : {1, 2, 4}) v.push_back(round_up((extent + threads * per - 1) / (threads * per), unit));
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      return v;
    };
    for (int64_t mc : sizes(rb.mr, s.m)) {
      for (int64_t nc : sizes(rb.nr, s.n)) {
        for (LoopOrder order : {LoopOrder::n_k_m, LoopOrder::m_n_k}) {
          for (SplitAxis split : {SplitAxis::n, SplitAxis::m}) {
            if (threads == 1 && split == SplitAxis::m) continue;  // same as split N
            Tiling t;
            t.threads = threads, t.smt = smt, t.mr = rb.mr, t.nr = rb.nr, t.mc = mc, t.nc = nc, t.kc = kc;
            t.order = order, t.split = split;
            Cost cost = estimate(s, t, c.kernel, c.caches, c.peaks);
            // The JIT kernels run any block (an activation block beyond L2 only costs L3 reads, which
            // the model charges); other kernels need their blocks to fit.
            const bool l2_fits = cost.fp.l2 <= double(c.caches.l2) / 2 || (c.kernel.jit && mc == rb.mr);
            if (cost.fp.l1 > double(c.caches.l1) || !l2_fits) continue;
            out.push_back({t, cost});
          }
        }
      }
    }
  }
}

bool better(const Scored& a, const Scored& b) {
  if (a.cost.total_us != b.cost.total_us) return a.cost.total_us < b.cost.total_us;
  return std::tie(a.t.threads, a.t.kc, a.t.mr) < std::tie(b.t.threads, b.t.kc, b.t.mr);  // deterministic
}

// Best tiling per thread count (1..max), with SMT variants when allowed.
std::map<int, Scored> best_per_threads(const Context& c, bool allow_smt, std::vector<Scored>* all) {
  std::map<int, Scored> best;
  int physical = int(c.budget.cores.size());
  for (int T = 1; T <= c.max_threads; ++T) {
    std::vector<Scored> cands;
    bool smt = T > physical;
    if (smt && !allow_smt) break;
    enumerate(c, T, smt, cands);
    if (cands.empty()) continue;
    auto it = std::min_element(cands.begin(), cands.end(), better);
    best[T] = *it;
    if (all) all->insert(all->end(), cands.begin(), cands.end());
  }
  if (best.empty()) throw Error("planner: no register/cache block fits the caches for " + c.shape.key());
  return best;
}

// Fewest threads within 2% of the fastest: an extra thread that buys nothing only adds contention.
int pick_threads(const std::map<int, Scored>& best) {
  double fastest = 1e300;
  for (const auto& [T, sc] : best) fastest = std::min(fastest, sc.cost.total_us);
  for (const auto& [T, sc] : best)
    if (sc.cost.total_us <= fastest * 1.02) return T;
  return best.begin()->first;
}

Plan make_plan(const Context& c, const Scored& sc, bool allow_smt) {
  Plan p;
  p.shape = c.shape;
  p.tiling = sc.t;
  p.cost = sc.cost;
  p.kernel = c.kernel;
  p.caches = c.caches;
  p.cpus = choose_worker_cpus(c.budget, sc.t.threads, allow_smt || sc.t.smt);
  return p;
}

void add_reasons(Plan& p, const Context& c, const std::map<int, Scored>* per_threads) {
  const OpShape& s = c.shape;
  const Tiling& t = p.tiling;
  const Cost& k = p.cost;
  auto& r = p.reasons;
  std::string budget = "budget: " + std::to_string(c.budget.max_threads) + " threads (" +
                       std::to_string(c.budget.cpus.size()) + " cpus allowed on " +
                       std::to_string(c.budget.cores.size()) + " cores" +
                       (c.budget.quota_enforced ? ", CPU quota: workers block instead of spinning" : ", no quota") + ")";
  for (const auto& why : c.budget.reasons) budget += "; " + why;
  r.push_back(budget);
  double W = double(s.n) * double(s.k) * c.kernel.weight_bytes * s.weight_matrices();
  r.push_back("work: " + fmt("%.3g", k.macs / 1e9) + " GMAC on " + compute_path_name(c.kernel.path) + " (" +
              c.kernel.isa_name + "), weights " + human_bytes(W) + " (" + tensor_type_info(s.wtype).name + " " +
              fmt("%.3g", 8 * c.kernel.weight_bytes) + " bit), activations " +
              human_bytes(double(s.m) * double(s.k) * c.kernel.act_bytes) + "; peaks: " + c.peaks.source);
  int nr_vec = t.nr / c.kernel.lanes;
  if (c.kernel.jit) {
    const int streams = nr_vec * s.weight_matrices();
    r.push_back("register block " + std::to_string(t.mr) + "x" + std::to_string(t.nr) + ": JIT kernel mr=" +
                std::to_string(t.mr) + ",nr=" + std::to_string(streams) + " (" + std::to_string(streams) +
                " weight stream" + (streams > 1 ? "s" : "") + ", " + jit::isa_name(c.kernel.jit_isa) + "); keeps " +
                fmt("%.0f%%", 100 * k.eff_register * k.eff_tail) + " of peak (load ratio, kernel efficiency " +
                fmt("%.2f", c.kernel.kernel_efficiency) + ", M/N tails)");
  } else {
    r.push_back("register block " + std::to_string(t.mr) + "x" + std::to_string(t.nr) + ": " +
                std::to_string(t.mr * nr_vec) + " accumulators + " + std::to_string(nr_vec) + " weight + 1 broadcast + " +
                std::to_string(c.kernel.reserved_regs) + " unpack of " + std::to_string(c.kernel.vector_regs) +
                " vector registers; keeps " + fmt("%.0f%%", 100 * k.eff_register * k.eff_tail) +
                " of peak (load ratio, M/N tails)");
  }
  r.push_back("cache blocks: kc " + std::to_string(t.kc) + " (L1 " + kib(c.caches.l1) + " holds panels " +
              human_bytes(k.fp.l1) + "), mc " + std::to_string(t.mc) + " x nc " + std::to_string(t.nc) + " (L2 " +
              kib(c.caches.l2) + " holds " + human_bytes(k.fp.l2) + "), " + loop_order_name(t.order) + ", L3 " +
              kib(c.caches.l3) + (k.fp.l3 <= double(c.caches.l3) / 2 ? " keeps " : " cannot keep ") +
              human_bytes(k.fp.l3) + "; threads split " + split_axis_name(t.split) + " (" +
              fmt("%.0f%%", 100 * k.eff_balance) + " balanced)");
  if (per_threads && per_threads->size() > 1) {
    std::string line = "threads:";
    for (const auto& [T, sc] : *per_threads)
      line += " " + std::to_string(T) + (sc.t.smt ? "(smt)" : "") + " -> " + human_us(sc.cost.total_us) + " (" +
              sc.cost.bound + ")" + ",";
    line.pop_back();
    line += "; chose " + std::to_string(t.threads) + " (fewest within 2% of the fastest)";
    r.push_back(line);
  }
  r.push_back("expected " + human_us(k.total_us) + ", " + k.bound + "-bound: compute " + human_us(k.compute_us) +
              ", DRAM " + human_us(k.dram_us) + " (" + human_bytes(k.bytes_dram) + "), L3 " + human_us(k.l3_us) +
              ", L2 " + human_us(k.l2_us) + ", L1 " + human_us(k.l1_us) + ", sync " + human_us(k.sync_us));
  for (const auto& n : c.caches.notes) r.push_back("note: " + n);
}

}  // namespace

std::vector<RegisterBlock> register_block_candidates(const KernelTraits& k, OpKind kind) {
  std::vector<RegisterBlock> out;
  if (k.jit) {
    const jit::Op op = kind == OpKind::gate_up_swiglu ? jit::Op::SwiGLU : jit::Op::Gemm;
    const int mats = kind == OpKind::gate_up_swiglu ? 2 : 1;
    for (int panels = 1; panels <= 4; ++panels) {
      int mr_max = 0;
      for (int mr = 1; mr <= 16; ++mr)
        if (jit::register_block_problem(k.jit_isa, op, mr, panels * mats).empty()) mr_max = mr;
      if (mr_max == 0) continue;
      // The largest mr, and smaller ones for short M where the emitter takes them (AMX: 16 only).
      std::set<int> mrs = {mr_max, std::min(mr_max, 4), std::min(mr_max, 2), 1};
      for (int mr : mrs)
        if (jit::register_block_problem(k.jit_isa, op, mr, panels * mats).empty()) out.push_back({mr, panels * k.lanes});
    }
    return out;
  }
  for (int nr_vec = 1; nr_vec <= 4; ++nr_vec) {
    int free_regs = k.vector_regs - nr_vec - 1 - k.reserved_regs;
    int mr_max = free_regs / nr_vec;
    if (mr_max < 1) continue;
    // The largest mr, and smaller ones for short M (decode, tails).
    std::set<int> mrs = {mr_max, std::min(mr_max, 4), std::min(mr_max, 2), 1};
    for (int mr : mrs) out.push_back({mr, nr_vec * k.lanes});
  }
  return out;
}

jit::KernelSpec jit_spec_for(const Plan& plan) {
  const OpShape& s = plan.shape;
  if (!plan.kernel.jit)
    throw Error(std::string("no JIT kernels for ") + tensor_type_info(s.wtype).name + " weights on " + plan.kernel.isa_name);
  const int lanes = jit::panel_cols(plan.kernel.jit_isa);
  if (plan.tiling.nr % lanes != 0 || plan.tiling.nc % lanes != 0)
    throw Error("tiling " + plan.tiling.describe() + ": nr and nc must be multiples of the " + std::to_string(lanes) +
                "-column weight panel");
  jit::KernelSpec spec;
  spec.op = s.kind == OpKind::gate_up_swiglu ? jit::Op::SwiGLU : s.kind == OpKind::gemv ? jit::Op::Gemv : jit::Op::Gemm;
  spec.epilogue = s.kind == OpKind::gate_up_swiglu ? jit::Epilogue::SwiGLU : jit::Epilogue::Store;
  spec.wtype = s.wtype;
  spec.atype = s.wtype == TensorType::Q8_0 ? TensorType::Q8_0 : TensorType::Q8_K;
  spec.isa = plan.kernel.jit_isa;
  spec.mr = plan.tiling.mr;
  spec.nr = plan.tiling.nr / lanes * s.weight_matrices();
  // A register block AMX does not take (a hand-made tiling) runs the AVX-512 kernel of the same panels.
  if (spec.isa == jit::IsaPath::Amx && !jit::register_block_problem(spec.isa, spec.op, spec.mr, spec.nr).empty())
    spec.isa = jit::IsaPath::Avx512;
  spec.nc = int(plan.tiling.nc / lanes);
  spec.k = s.k;
  spec.validate();
  return spec;
}

Plan plan_op(const OpShape& shape, const topo::Machine& m, const PlannerOptions& opts) {
  Context c = make_context(shape, m, opts);
  if (opts.exact_threads > 0) {
    int T = std::min(opts.exact_threads, c.max_threads);
    std::vector<Scored> cands;
    enumerate(c, T, T > int(c.budget.cores.size()), cands);
    if (cands.empty()) throw Error("planner: no register/cache block fits the caches for " + shape.key());
    Plan p = make_plan(c, *std::min_element(cands.begin(), cands.end(), better), opts.allow_smt);
    if (T < opts.exact_threads)
      p.reasons.push_back("asked for " + std::to_string(opts.exact_threads) + " threads; the budget allows " +
                          std::to_string(T));
    add_reasons(p, c, nullptr);
    return p;
  }
  auto per = best_per_threads(c, opts.allow_smt, nullptr);
  Plan p = make_plan(c, per.at(pick_threads(per)), opts.allow_smt);
  add_reasons(p, c, &per);
  return p;
}

namespace {

// The candidates of one context (one ISA path): the model's pick first.
std::vector<Plan> candidates_in(const Context& c, const PlannerOptions& opts, std::size_t max_candidates) {
  std::vector<Scored> all;
  auto per = best_per_threads(c, opts.allow_smt, &all);
  std::sort(all.begin(), all.end(), better);
  std::vector<Scored> chosen;
  auto seen = [&](const Tiling& t) {
    return std::any_of(chosen.begin(), chosen.end(), [&](const Scored& s) { return s.t == t; });
  };
  // The model's pick first, then the best of every thread count, then distinct register blocks.
  chosen.push_back(per.at(pick_threads(per)));
  for (const auto& [T, sc] : per)
    if (!seen(sc.t)) chosen.push_back(sc);
  // The model's next-best cache blocks for the pick's register block and thread count (other
  // mc / nc / order), so the sweep also checks the pick's cache blocking.
  const Tiling pick = chosen.front().t;
  int neighbours = 0;
  for (const auto& sc : all) {
    if (neighbours == 2) break;
    if (sc.t.threads == pick.threads && sc.t.mr == pick.mr && sc.t.nr == pick.nr && !seen(sc.t))
      chosen.push_back(sc), ++neighbours;
  }
  std::set<std::tuple<int, int, int>> blocks;
  for (const auto& sc : chosen) blocks.insert({sc.t.threads, sc.t.mr, sc.t.nr});
  for (const auto& sc : all)
    if (blocks.insert({sc.t.threads, sc.t.mr, sc.t.nr}).second) chosen.push_back(sc);
  for (const auto& sc : all) {
    if (chosen.size() >= max_candidates * 2) break;
    if (!seen(sc.t)) chosen.push_back(sc);
  }
  if (chosen.size() > std::max<std::size_t>(1, max_candidates)) chosen.resize(std::max<std::size_t>(1, max_candidates));
  std::vector<Plan> plans;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    Plan p = make_plan(c, chosen[i], opts.allow_smt);
    add_reasons(p, c, i == 0 ? &per : nullptr);
    plans.push_back(std::move(p));
  }
  return plans;
}

}  // namespace

std::vector<Plan> plan_candidates(const OpShape& shape, const topo::Machine& m, const PlannerOptions& opts,
                                  std::size_t max_candidates) {
  std::vector<Plan> plans = candidates_in(make_context(shape, m, opts), opts, max_candidates);
  const Context amx = make_context(shape, m, opts, true);
  if (amx.kernel.jit_isa != jit::IsaPath::Amx || max_candidates < 2) return plans;
  // AMX tiles are measured too: about half the candidates, the AMX model's pick among them.
  std::vector<Plan> tiles = candidates_in(amx, opts, max_candidates / 2);
  plans.resize(std::min(plans.size(), max_candidates - tiles.size()));
  for (Plan& p : tiles) plans.push_back(std::move(p));
  return plans;
}

Plan plan_for_tiling(const OpShape& shape, const Tiling& tiling, const topo::Machine& m, const PlannerOptions& opts) {
  Context c = make_context(shape, m, opts, tiling.mr == jit::kAmxTileRows);  // AMX tiles are 16 rows high
  if (tiling.threads > c.budget.max_threads)
    throw Error("tiling wants " + std::to_string(tiling.threads) + " threads; the CPU budget is " +
                std::to_string(c.budget.max_threads));
  Scored sc{tiling, estimate(shape, tiling, c.kernel, c.caches, c.peaks)};
  Plan p = make_plan(c, sc, opts.allow_smt || tiling.smt);
  if (int(p.cpus.size()) < tiling.threads)
    throw Error("tiling wants " + std::to_string(tiling.threads) + " threads; only " + std::to_string(p.cpus.size()) +
                " cpus are usable" + (tiling.smt ? "" : " without SMT"));
  add_reasons(p, c, nullptr);
  return p;
}

Plan plan_with_profile(const OpShape& shape, const topo::Machine& m, const ProfileEntry* entry,
                       const std::string& profile_path, const PlannerOptions& opts) {
  if (entry) {
    try {
      Plan p = plan_for_tiling(shape, entry->best.tiling, m, opts);
      p.source = "profile " + profile_path;
      p.reasons.insert(p.reasons.begin(), "measured by `ckjit tune` (" + entry->runner + "): " +
                                              human_us(entry->best.median_us) + " median, " +
                                              std::to_string(entry->rejected.size()) + " candidates rejected");
      return p;
    } catch (const Error& e) {
      Plan p = plan_op(shape, m, opts);
      p.reasons.insert(p.reasons.begin(), std::string("profile entry not used: ") + e.what());
      return p;
    }
  }
  return plan_op(shape, m, opts);
}

std::string Plan::to_json() const {
  OrderedJson j;
  j["shape"] = shape.key();
  j["source"] = source;
  j["tiling"] = {{"threads", tiling.threads}, {"smt", tiling.smt}, {"mr", tiling.mr}, {"nr", tiling.nr},
                 {"mc", tiling.mc}, {"nc", tiling.nc}, {"kc", tiling.kc},
                 {"order", loop_order_name(tiling.order)}, {"split", split_axis_name(tiling.split)}};
  j["cpus"] = cpus;
  j["kernel"] = {{"path", compute_path_name(kernel.path)}, {"isa", kernel.isa_name}, {"vector_regs", kernel.vector_regs},
                 {"lanes", kernel.lanes}, {"reserved_regs", kernel.reserved_regs}, {"weight_bytes", kernel.weight_bytes},
                 {"act_bytes", kernel.act_bytes}};
  j["caches"] = {{"l1", caches.l1}, {"l2", caches.l2}, {"l3", caches.l3}, {"l3_cores", caches.l3_cores}};
  j["footprint"] = {{"l1", cost.fp.l1}, {"l2", cost.fp.l2}, {"l3", cost.fp.l3}};
  j["cost"] = {{"expected_us", cost.total_us}, {"bound", cost.bound}, {"macs", cost.macs}, {"compute_us", cost.compute_us},
               {"dram_us", cost.dram_us}, {"l3_us", cost.l3_us}, {"l2_us", cost.l2_us}, {"l1_us", cost.l1_us},
               {"sync_us", cost.sync_us}, {"bytes_dram", cost.bytes_dram}, {"bytes_l3", cost.bytes_l3},
               {"bytes_l2", cost.bytes_l2}, {"bytes_l1", cost.bytes_l1}, {"eff_register", cost.eff_register},
               {"eff_tail", cost.eff_tail}, {"eff_balance", cost.eff_balance}};
  j["reasons"] = reasons;
  return dump_json(j);
}

}  // namespace ckjit::planner
