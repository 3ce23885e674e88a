#include "jit/kernel_spec.h"

#include <charconv>
#include <sstream>
#include <vector>

#include "jit/weight_kernels.h"
#include "runtime/error.h"

namespace ckjit::jit {
namespace {

template <class E>
struct Named { E value; const char* name; };

constexpr Named<Op> kOps[] = {{Op::Quantize, "quantize"}, {Op::Gemm, "gemm"}, {Op::Gemv, "gemv"},
                              {Op::SwiGLU, "swiglu"}, {Op::Dense, "dense"}};
constexpr Named<IsaPath> kIsas[] = {
    {IsaPath::Avx2, "avx2"}, {IsaPath::AvxVnni, "avxvnni"}, {IsaPath::Avx512, "avx512"}, {IsaPath::Amx, "amx"}};
constexpr Named<VnniEncoding> kEncodings[] = {{VnniEncoding::Vex, "vex"}, {VnniEncoding::Evex, "evex"}};
constexpr Named<Epilogue> kEpilogues[] = {
    {Epilogue::Store, "store"}, {Epilogue::ResidualAdd, "residual"}, {Epilogue::SwiGLU, "swiglu"},
    {Epilogue::Bias, "bias"}, {Epilogue::BiasResidual, "bias_residual"}};
constexpr Named<TensorType> kTypes[] = {{TensorType::F32, "f32"},   {TensorType::F16, "f16"},
                                        {TensorType::BF16, "bf16"}, {TensorType::Q8_0, "q8_0"},
                                        {TensorType::Q4_K, "q4_K"}, {TensorType::Q5_K, "q5_K"},
                                        {TensorType::Q6_K, "q6_K"}, {TensorType::Q8_K, "q8_K"}};

template <class E, size_t N>
const char* name_of(const Named<E> (&table)[N], E v) {
  for (const auto& t : table)
    if (t.value == v) return t.name;
  return "?";
}

template <class E, size_t N>
E value_of(const Named<E> (&table)[N], const std::string& key, const std::string& s) {
  for (const auto& t : table)
    if (s == t.name) return t.value;
  std::string known;
  for (const auto& t : table) known += std::string(known.empty() ? "" : ", ") + t.name;
  throw Error("kernel spec: bad value '" + s + "' for " + key + " (expected one of: " + known + ")");
}

int64_t parse_int(const std::string& key, const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    throw Error("kernel spec: " + key + " needs a non-negative integer, got '" + s + "'");
  return v;
}

int parse_small(const std::string& key, const std::string& s) {
  int64_t v = parse_int(key, s);
  if (v > 1 << 20) throw Error("kernel spec: " + key + " = " + s + " is too large");
  return static_cast<int>(v);
}

}  // namespace

const char* op_name(Op op) { return name_of(kOps, op); }
const char* isa_name(IsaPath isa) { return name_of(kIsas, isa); }
const char* epilogue_name(Epilogue e) { return name_of(kEpilogues, e); }
const char* encoding_name(VnniEncoding e) { return name_of(kEncodings, e); }

std::string KernelSpec::to_string() const {
  std::ostringstream o;
  o << "op=" << op_name(op) << ",w=" << name_of(kTypes, wtype) << ",a=" << name_of(kTypes, atype)
    << ",isa=" << isa_name(isa) << ",mr=" << mr << ",nr=" << nr << ",kc=" << kc << ",nc=" << nc
    << ",pf=" << pf << ",k=" << k << ",m=" << m_min << "-" << m_max << ",ep=" << epilogue_name(epilogue);
  // Only the AvxVnni path has a choice of encoding; other specs keep their text unchanged.
  if (isa == IsaPath::AvxVnni) o << ",enc=" << encoding_name(enc);
  if (op == Op::Dense) o << ",acc=" << (accumulate ? 1 : 0);
  return o.str();
}

KernelSpec KernelSpec::parse(const std::string& text) {
  KernelSpec s;
  if (text.empty()) throw Error("kernel spec: empty");
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) throw Error("kernel spec: '" + item + "' is not key=value");
    std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    if (key == "op") s.op = value_of(kOps, key, val);
    else if (key == "w") s.wtype = value_of(kTypes, key, val);
    else if (key == "a") s.atype = value_of(kTypes, key, val);
    else if (key == "isa") s.isa = value_of(kIsas, key, val);
    else if (key == "mr") s.mr = parse_small(key, val);
    else if (key == "nr") s.nr = parse_small(key, val);
    else if (key == "kc") s.kc = parse_small(key, val);
    else if (key == "nc") s.nc = parse_small(key, val);
    else if (key == "pf") s.pf = parse_small(key, val);
    else if (key == "k") s.k = parse_int(key, val);
    else if (key == "m") {
      auto dash = val.find('-');
      if (dash == std::string::npos) s.m_min = s.m_max = parse_int(key, val);
      else {
        s.m_min = parse_int(key, val.substr(0, dash));
        s.m_max = parse_int(key, val.substr(dash + 1));
      }
    } else if (key == "ep") s.epilogue = value_of(kEpilogues, key, val);
    else if (key == "enc") s.enc = value_of(kEncodings, key, val);
    else if (key == "acc") {
      if (val != "0" && val != "1") throw Error("kernel spec: acc must be 0 or 1, got '" + val + "'");
      s.accumulate = val == "1";
    }
    else throw Error("kernel spec: unknown key '" + key + "'");
  }
  s.validate();
  return s;
}

std::string dense_block_problem(IsaPath isa, int mr, int nr) {
  if (isa == IsaPath::Amx)
    return mr == kAmxDenseRows && nr == kAmxDensePanels ? "" : "op=dense on AMX works on 32 x 32 blocks (mr=32, nr=2)";
  if (isa != IsaPath::Avx2 && isa != IsaPath::Avx512)
    return "op=dense has avx2, avx512 and amx (bf16) emitters";
  if (mr < 1 || mr > 12) return "mr must be 1..12";
  if (nr < 1 || nr > 4) return "nr must be 1..4";
  const int regs = isa == IsaPath::Avx512 ? 32 : 16;
  if (mr * nr + nr + 1 > regs)
    return "mr*nr + nr + 1 = " + std::to_string(mr * nr + nr + 1) + " > " + std::to_string(regs) +
           (regs == 32 ? " zmm registers" : " ymm registers");
  return "";
}

std::string register_block_problem(IsaPath isa, Op op, int mr, int nr) {
  if (isa == IsaPath::Amx) {
    if (mr != 16) return "AMX kernels work on 16-row tiles (mr=16)";
    if (nr < 1 || nr > 2) return "AMX kernels take nr = 1 or 2 weight streams (tile budget)";
    return op == Op::SwiGLU && nr != 2 ? "swiglu needs an even nr (gate and up panels in pairs)" : "";
  }
  if (mr < 1 || mr > 6) return "mr must be 1..6";
  if (nr < 1 || nr > 4) return "nr must be 1..4";
  if (op == Op::SwiGLU && nr % 2 != 0) return "swiglu needs an even nr (gate and up panels in pairs)";
  // AVX-VNNI keeps one accumulator register per (row, stream) (its int32 sums go to the stack).
  const int accs = isa == IsaPath::AvxVnni ? 1 : 2;
  const int budget = is_ymm_path(isa) ? 13 : 27;
  const int need = accs * mr * nr + nr;
  const std::string formula = accs == 1 ? "mr*nr + nr = " : "2*mr*nr + nr = ";
  if (need > budget)
    return "mr*nr too large: " + formula + std::to_string(need) + " > " + std::to_string(budget) +
           (is_ymm_path(isa) ? " (16 ymm registers)" : " (32 zmm registers)");
  return "";
}

void KernelSpec::validate() const {
  auto fail = [&](const std::string& why) { throw Error("kernel spec " + to_string() + ": " + why); };
  if (accumulate && op != Op::Dense) fail("acc=1 applies to op=dense only");
  if (op == Op::Dense) {
    std::string why = dense_block_problem(isa, mr, nr);
    if (!why.empty()) fail(why);
    if (isa == IsaPath::Amx) {
      // AMX-BF16: bf16 weights times bf16 activation rows, the whole K per call, stored as is.
      if (wtype != TensorType::BF16 || atype != TensorType::BF16) fail("op=dense on AMX takes bf16 weights and activations");
      if (k % kAmxDenseK != 0 || kc != k) fail("op=dense on AMX needs k a multiple of 32 and kc = k");
      if (epilogue != Epilogue::Store || accumulate) fail("op=dense on AMX stores its block (ep=store, acc=0)");
    } else {
      if (wtype != TensorType::F16 && wtype != TensorType::BF16 && wtype != TensorType::F32)
        fail("op=dense takes f16, bf16 or f32 weights");
      if (atype != TensorType::F32) fail("op=dense takes f32 activations (a=f32)");
    }
    if (epilogue != Epilogue::Store && epilogue != Epilogue::Bias && epilogue != Epilogue::BiasResidual)
      fail("op=dense epilogues are store, bias and bias_residual");
    if (kc < 1 || k < kc) fail("op=dense needs 1 <= kc <= k (kc: elements per call, k: the whole K)");
    if (k > (int64_t(1) << 24)) fail("k too large");
    if (m_min < 1 || (m_max != 0 && m_max < m_min)) fail("bad m range");
    return;
  }
  if (op == Op::Quantize) {
    if (wtype != TensorType::F32) fail("quantize reads f32 (w=f32)");
    if (atype != TensorType::Q8_K && atype != TensorType::Q8_0) fail("quantize produces q8_K or q8_0");
    if (epilogue != Epilogue::Store) fail("quantize has no epilogue");
  } else {
    const WeightKernels* w = weight_kernels(wtype);
    if (!w || w->atype != atype) fail("unsupported weight/activation pair");
    if ((op == Op::SwiGLU) != (epilogue == Epilogue::SwiGLU)) fail("op swiglu goes with ep=swiglu and only it");
    if (isa == IsaPath::Amx && mr != 16) fail("AMX kernels work on 16-row tiles (mr=16)");
    if (isa == IsaPath::Amx && (nr < 1 || nr > 4)) fail("nr must be 1..4");
    if (isa == IsaPath::Amx && op == Op::SwiGLU && nr % 2 != 0) fail("swiglu needs an even nr (gate and up panels in pairs)");
    if (isa != IsaPath::Amx) {
      std::string why = register_block_problem(isa, op, mr, nr);
      if (!why.empty()) fail(why);
    }
  }
  if (enc != VnniEncoding::Vex && isa != IsaPath::AvxVnni) fail("enc=evex applies to isa=avxvnni only");
  if (k <= 0) fail("k must be given (k > 0)");
  const int64_t blk = tensor_type_info(atype).block_elems;
  if (k < 0 || k % blk != 0) fail("k must be a multiple of " + std::to_string(blk));
  if (kc < 0 || nc < 0) fail("negative cache block");
  if (pf > 64) fail("prefetch distance must be 0..64 blocks");
  if (m_min < 1 || (m_max != 0 && m_max < m_min)) fail("bad m range");
}

}  // namespace ckjit::jit
