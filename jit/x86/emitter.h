#pragma once
// Base of the x86 emitters: an Xbyak code generator that only emits code for one KernelSpec.
// Code goes into a growable read-write buffer; the code cache flips it to read+exec once done
// (never writable and executable at the same time). What the cache sees of it is GeneratedCode.
#include <memory>

#include <xbyak/xbyak.h>

#include "jit/generated_code.h"
#include "jit/kernel_spec.h"

namespace ckjit::jit {

class Emitter : public Xbyak::CodeGenerator, public GeneratedCode {
 public:
  explicit Emitter(const KernelSpec& spec) : Xbyak::CodeGenerator(4096, Xbyak::AutoGrow), spec_(spec) {}
  const KernelSpec& spec() const override { return spec_; }
  // AutoGrow buffers are plain read-write memory until ready() resolves the labels and switches
  // the pages to read+exec.
  const void* make_executable() override {
    ready(Xbyak::CodeArray::PROTECT_RE);
    return getCode();
  }
  size_t code_size() const override { return getSize(); }
  const uint8_t* code_bytes() const override { return getCode(); }
  const char* objdump_options() const override { return "-mi386:x86-64 -M intel"; }

 protected:
  KernelSpec spec_;
};

}  // namespace ckjit::jit
