#pragma once
// Machine code generated for one KernelSpec, whatever generated it (Xbyak on x86: jit/x86/emitter.h;
// asmjit on AArch64 next): all the code cache and the layers above see of a generator. Nothing
// here names an instruction set, so the cache, the kernels' callers and `ckjit inspect` build on
// every architecture; only the generator behind emit_kernel is chosen by it.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "jit/kernel_spec.h"

namespace ckjit::jit {

class GeneratedCode {
 public:
  virtual ~GeneratedCode() = default;
  virtual const KernelSpec& spec() const = 0;
  // Resolves what is left to resolve and turns the code's pages read+exec (never writable again);
  // returns the entry point. Called once, by the code cache.
  virtual const void* make_executable() = 0;
  virtual size_t code_size() const = 0;
  virtual const uint8_t* code_bytes() const = 0;
  // objdump's options for this code's machine (`ckjit inspect --kernel` disassembles with them).
  virtual const char* objdump_options() const = 0;
};

// Emits the code of `spec` (not yet executable) with this build's generator. Throws ckjit::Error
// for specs no emitter handles.
std::unique_ptr<GeneratedCode> emit_kernel(const KernelSpec& spec);

}  // namespace ckjit::jit
