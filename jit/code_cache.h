#pragma once
// Generated kernels, keyed by their spec. Emitting happens once per spec; the code pages are made
// read+exec right after emitting and are never writable again.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "jit/generated_code.h"
#include "jit/kernel_spec.h"

namespace ckjit::jit {

class JitKernel {
 public:
  explicit JitKernel(std::unique_ptr<GeneratedCode> code);
  const KernelSpec& spec() const { return code_->spec(); }
  // Whether this process may execute the kernel (CPUID, OS state, CKJIT_MAX_ISA); emitting never
  // needs it, calling does (run_tile and the quantize helpers check it).
  bool runnable() const { return runnable_; }
  // Throws ckjit::Error when the kernel cannot run here.
  void require_runnable() const;
  const void* entry() const { return entry_; }
  size_t size() const { return code_->code_size(); }
  const char* objdump_options() const { return code_->objdump_options(); }
  template <class Fn> Fn as() const { return reinterpret_cast<Fn>(const_cast<void*>(entry_)); }

 private:
  // CKJIT_PERF_MAP=1: lists the kernel in /tmp/perf-<pid>.map so `perf report` can name it.
  void add_to_perf_map() const;
  std::unique_ptr<GeneratedCode> code_;
  const void* entry_ = nullptr;
  bool runnable_ = false;
};

class CodeCache {
 public:
  // The kernel for spec, emitting it on first use. Thread-safe; the reference stays valid for the
  // cache's lifetime.
  // Error when the new kernel would take the generated code past the cache's bound.
  const JitKernel& get(const KernelSpec& spec);
  size_t size() const;
  // Bytes of generated code held (each kernel's pages), and the bound: CKJIT_CODE_CACHE_MB, else
  // 256 MiB — a real model needs a few MiB, so hitting it means a runaway of specs, not a big model.
  size_t code_bytes() const;
  size_t limit_bytes() const;
  void set_limit_bytes(size_t bytes);

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<JitKernel>> kernels_;
  size_t code_bytes_ = 0, limit_bytes_ = 0;  // limit 0: not read from the environment yet
};

CodeCache& global_code_cache();

// The spec in canonical form, then the generated code: a disassembly when objdump is on PATH,
// otherwise hex bytes. Used by `ckjit inspect --kernel SPEC`.
std::string describe_kernel(const std::string& spec_text);

}  // namespace ckjit::jit
