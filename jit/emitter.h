#pragma once
// Base of all emitters: an Xbyak code generator that only emits code for one KernelSpec.
// Code goes into a growable read-write buffer; the code cache flips it to read+exec once done
// (never writable and executable at the same time).
#include <memory>

#include <xbyak/xbyak.h>

#include "jit/kernel_spec.h"

namespace ckjit::jit {

class Emitter : public Xbyak::CodeGenerator {
 public:
  explicit Emitter(const KernelSpec& spec) : Xbyak::CodeGenerator(4096, Xbyak::AutoGrow), spec_(spec) {}
  const KernelSpec& spec() const { return spec_; }

 protected:
  KernelSpec spec_;
};

// Emits the code of `spec` (not yet executable). Throws ckjit::Error for specs no emitter handles.
std::unique_ptr<Emitter> emit_kernel(const KernelSpec& spec);

}  // namespace ckjit::jit
