#include "runtime/op_shape.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "runtime/error.h"

namespace ckjit {
namespace {
std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower((unsigned char)c));
  return s;
}
bool parse_dim(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 12) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}
}  // namespace

std::string op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::gemm: return "gemm";
    case OpKind::gemv: return "gemv";
    case OpKind::gate_up_swiglu: return "gate_up_swiglu";
  }
  return "?";
}

OpKind parse_op_kind(const std::string& s) {
  std::string t = lower(s);
  if (t == "gemm" || t == "matmul") return OpKind::gemm;
  if (t == "gemv") return OpKind::gemv;
  if (t == "gate_up" || t == "gate_up_swiglu" || t == "ffn_gate_up") return OpKind::gate_up_swiglu;
  throw Error("unknown op '" + s + "' (expected gemm, gemv or gate_up)");
}

TensorType parse_tensor_type(const std::string& s) {
  std::string t = lower(s);
  for (int id = 0; id < 64; ++id)
    if (auto info = tensor_type_info(id); info && lower(info->name) == t) return info->type;
  throw Error("unknown weight type '" + s + "' (e.g. q4_k, q6_k, q8_0, f16, bf16, f32)");
}

std::string OpShape::key() const {
  std::ostringstream s;
  s << op_kind_name(kind) << ':' << tensor_type_info(wtype).name << ':' << m << 'x' << n << 'x' << k;
  return s.str();
}

void validate(const OpShape& s) {
  const auto& t = tensor_type_info(s.wtype);
  auto bad = [&](const std::string& why) { throw Error("op " + s.key() + ": " + why); };
  if (s.m < 1 || s.n < 1 || s.k < 1) bad("M, N and K must be at least 1");
  const int64_t limit = int64_t(1) << 31;
  if (s.m > limit || s.n > limit || s.k > limit) bad("dimension too large");
  if (s.k % t.block_elems != 0)
    bad("K must be a multiple of the " + std::string(t.name) + " block of " + std::to_string(t.block_elems));
  if (s.kind == OpKind::gemv && s.m != 1) bad("gemv has M = 1 (use gemm for M > 1)");
  if (!t.in_files && s.wtype != TensorType::Q8_K) bad(std::string(t.name) + " is not a weight type");
}

OpShape parse_op_shape(const std::string& text, TensorType default_wtype) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
  if (parts.size() < 2 || parts.size() > 3)
    throw Error("bad shape '" + text + "': expected op:MxNxK[:wtype], e.g. gate_up:1028x12288x4096:q4_k");
  OpShape s;
  s.kind = parse_op_kind(parts[0]);
  s.wtype = parts.size() == 3 ? parse_tensor_type(parts[2]) : default_wtype;
  std::vector<std::string> dims;
  std::stringstream ds(parts[1]);
  for (std::string d; std::getline(ds, d, 'x');) dims.push_back(d);
  if (dims.size() != 3 || !parse_dim(dims[0], &s.m) || !parse_dim(dims[1], &s.n) || !parse_dim(dims[2], &s.k))
    throw Error("bad dimensions '" + parts[1] + "' in shape '" + text + "': expected MxNxK");
  validate(s);
  return s;
}

std::string loop_order_name(LoopOrder o) { return o == LoopOrder::n_k_m ? "N>K>M" : "M>N>K"; }
std::string split_axis_name(SplitAxis a) { return a == SplitAxis::n ? "N" : "M"; }
LoopOrder parse_loop_order(const std::string& s) {
  if (s == "N>K>M") return LoopOrder::n_k_m;
  if (s == "M>N>K") return LoopOrder::m_n_k;
  throw Error("unknown loop order '" + s + "'");
}
SplitAxis parse_split_axis(const std::string& s) {
  if (s == "N") return SplitAxis::n;
  if (s == "M") return SplitAxis::m;
  throw Error("unknown split axis '" + s + "'");
}

std::string Tiling::describe() const {
  std::ostringstream s;
  s << threads << " thr" << (smt ? " (SMT)" : "") << ", reg " << mr << 'x' << nr << ", mc " << mc << " nc " << nc
    << " kc " << kc << ", " << loop_order_name(order) << ", split " << split_axis_name(split);
  return s.str();
}

}  // namespace ckjit
