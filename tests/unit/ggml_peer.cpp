#include "ggml_peer.h"

#include <cpuid.h>
#include <dlfcn.h>

#include <cstring>
#include <filesystem>

namespace ckjit::test {
namespace {

void* g_cpu_lib = nullptr;
void* cpu_symbol(const char* name) { return dlsym(g_cpu_lib, name); }

bool cpu_has_avx2_fma_f16c() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool fma = c & (1u << 12), f16c = c & (1u << 29), osxsave = c & (1u << 27);
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool avx2 = b & (1u << 5);
  if (!osxsave) return false;
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return avx2 && fma && f16c && (lo & 6) == 6;  // OS saves XMM and YMM state
}

GgmlPeer load() {
  GgmlPeer p;
  // The "haswell" variant is ggml's AVX2+FMA+F16C build (no AVX-512): its vec_dot kernels are the
  // AVX2 branches of ggml-cpu/arch/x86/quants.c that quants.md §8 documents.
  if (!cpu_has_avx2_fma_f16c()) {
    p.error = "this CPU lacks AVX2/FMA/F16C: the AVX2 ggml kernels used as the parity reference cannot run";
    return p;
  }
  const std::filesystem::path dir =
      std::filesystem::path(CKJIT_SOURCE_DIR) / ".deps/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64";
  const auto base_path = dir / "libggml-base.so", cpu_path = dir / "libggml-cpu-haswell.so";
  if (!std::filesystem::exists(base_path) || !std::filesystem::exists(cpu_path)) {
    p.error = "llama.cpp's ggml libraries are missing (" + dir.string() + "); run tools/setup.sh";
    return p;
  }
  void* base = dlopen(base_path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!base) { p.error = std::string("dlopen libggml-base.so: ") + dlerror(); return p; }
  g_cpu_lib = dlopen(cpu_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!g_cpu_lib) { p.error = std::string("dlopen libggml-cpu-haswell.so: ") + dlerror(); return p; }

  p.quantize_chunk = reinterpret_cast<decltype(p.quantize_chunk)>(dlsym(base, "ggml_quantize_chunk"));
  p.type_traits = reinterpret_cast<decltype(p.type_traits)>(dlsym(base, "ggml_get_type_traits"));
  p.type_traits_cpu = reinterpret_cast<decltype(p.type_traits_cpu)>(dlsym(g_cpu_lib, "ggml_get_type_traits_cpu"));
  auto cpu_init = reinterpret_cast<void (*)()>(dlsym(g_cpu_lib, "ggml_cpu_init"));
  auto version = reinterpret_cast<const char* (*)()>(dlsym(base, "ggml_version"));
  auto commit = reinterpret_cast<const char* (*)()>(dlsym(base, "ggml_commit"));
  if (!p.quantize_chunk || !p.type_traits || !p.type_traits_cpu || !cpu_init || !version || !commit) {
    p.error = "the ggml libraries lack an expected symbol (ggml_quantize_chunk, ggml_get_type_traits, "
              "ggml_get_type_traits_cpu, ggml_cpu_init, ggml_version, ggml_commit)";
    return p;
  }
  p.q8_K_to_float = reinterpret_cast<ToFloat>(dlsym(base, "dequantize_row_q8_K"));
  if (!p.q8_K_to_float) { p.error = "libggml-base.so lacks dequantize_row_q8_K"; return p; }
  p.version = std::string(version()) + " (" + commit() + ")";
  p.symbol = cpu_symbol;
  cpu_init();

  // Verify the struct layouts by behaviour: names and sizes of the base traits, and that the CPU
  // traits point at the exported AVX2 kernels and activation quantizers.
  struct Expect { int type; const char* name; int64_t blck; size_t size; };
  for (const Expect& e : {Expect{kF16, "f16", 1, 2}, Expect{kBF16, "bf16", 1, 2}, Expect{kQ8_0, "q8_0", 32, 34},
                          Expect{kQ4_K, "q4_K", 256, 144}, Expect{kQ5_K, "q5_K", 256, 176},
                          Expect{kQ6_K, "q6_K", 256, 210}, Expect{kQ8_K, "q8_K", 256, 292}}) {
    const GgmlTypeTraits* t = p.type_traits(e.type);
    if (!t || std::strcmp(t->type_name, e.name) != 0 || t->blck_size != e.blck || t->type_size != e.size ||
        !p.to_float(e.type)) {
      p.error = std::string("ggml_type_traits layout check failed for ") + e.name;
      return p;
    }
  }
  struct ExpectCpu { int type; const char* vec_dot; int vec_dot_type; };
  for (const ExpectCpu& e : {ExpectCpu{kQ4_K, "ggml_vec_dot_q4_K_q8_K", kQ8_K}, ExpectCpu{kQ5_K, "ggml_vec_dot_q5_K_q8_K", kQ8_K},
                             ExpectCpu{kQ6_K, "ggml_vec_dot_q6_K_q8_K", kQ8_K}, ExpectCpu{kQ8_0, "ggml_vec_dot_q8_0_q8_0", kQ8_0}}) {
    const GgmlTypeTraitsCpu* t = p.type_traits_cpu(e.type);
    if (!t || reinterpret_cast<void*>(t->vec_dot) != cpu_symbol(e.vec_dot) || t->vec_dot_type != e.vec_dot_type || t->nrows != 1) {
      p.error = std::string("ggml_type_traits_cpu layout check failed for ") + e.vec_dot;
      return p;
    }
  }
  if (reinterpret_cast<void*>(p.type_traits_cpu(kQ8_K)->from_float) != cpu_symbol("quantize_row_q8_K") ||
      reinterpret_cast<void*>(p.type_traits_cpu(kQ8_0)->from_float) != cpu_symbol("quantize_row_q8_0")) {
    p.error = "ggml_type_traits_cpu.from_float does not point at quantize_row_q8_K / quantize_row_q8_0";
    return p;
  }
  return p;
}

}  // namespace

ToFloat GgmlPeer::to_float(int type) const { return type == kQ8_K ? q8_K_to_float : type_traits(type)->to_float; }

const GgmlPeer& ggml_peer() {
  static const GgmlPeer peer = load();
  return peer;
}

}  // namespace ckjit::test
