#pragma once
// Shared frame of the activation quantizer emitters (f32 rows -> Q8_K or Q8_0 rows): the loops
// over rows and blocks around a derived emit_block(), and the |x| maximum of one block.
#include <bit>

#include "jit/x86/emitter.h"

namespace ckjit::jit {

class QuantizeEmitter : public Emitter {
 protected:
  using Emitter::Emitter;
  Xbyak::Label consts_;

  // The block at r9 (f32) -> the block at r10; may use rax, rcx and any vector register but the
  // derived emitter's constants.
  virtual void emit_block() = 0;

  // rdi args; rsi x row, rdx y row, r8 rows left.
  void load_row_args() {
    mov(rsi, ptr[rdi + 0]);
    mov(rdx, ptr[rdi + 8]);
    mov(r8, ptr[rdi + 16]);
  }

  // Rows loop (row strides at args +24, +32) around the loop over `blocks` blocks: r9 x block,
  // r10 y block, r11d blocks left. Ends with ret; the caller's constants may follow.
  void emit_row_loops(int blocks, int x_block_bytes, int y_block_bytes) {
    Xbyak::Label rows, rows_done;
    L(rows);
    test(r8, r8);
    jz(rows_done, T_NEAR);
    mov(r9, rsi);
    mov(r10, rdx);
    mov(r11d, blocks);
    Xbyak::Label block;
    L(block);
    emit_block();
    add(r9, x_block_bytes);
    add(r10, y_block_bytes);
    dec(r11d);
    jnz(block, T_NEAR);
    add(rsi, ptr[rdi + 24]);
    add(rdx, ptr[rdi + 32]);
    dec(r8);
    jmp(rows, T_NEAR);
    L(rows_done);
    vzeroupper();
    ret();
  }

  // V(0) <- max |x| lane-wise over `count` vectors at r9 (abs_mask: 0x7fffffff lanes); uses V(1).
  template <class V>
  void emit_abs_max(const V& abs_mask, int count) {
    const V acc(0), t(1);
    const int bytes = int(acc.getBit() / 8);
    vandps(acc, abs_mask, ptr[r9]);
    for (int v = 1; v < count; ++v) {
      vandps(t, abs_mask, ptr[r9 + v * bytes]);
      vmaxps(acc, acc, t);
    }
  }

  // Q8_K constants: +0 |x| mask, +4 and +8 the emitter's own, +12 127, +16 -127.0f, +20 1.0f.
  void emit_q8k_constants(uint32_t own4, uint32_t own8) {
    align(16);
    L(consts_);
    dd(0x7fffffff);
    dd(own4);
    dd(own8);
    dd(127);
    dd(std::bit_cast<uint32_t>(-127.0f));
    dd(std::bit_cast<uint32_t>(1.0f));
  }

  // Q8_K, at `found`: eax = lane matches of the vector whose first element index is ecx. The first
  // match is the signed max; xmm2 <- iscale = -127/max, and d = 1/iscale goes to the y block.
  void emit_q8k_scale(Xbyak::Label& found) {
    L(found);
    tzcnt(eax, eax);
    add(eax, ecx);
    vmovss(xmm1, ptr[r9 + rax * 4]);
    vmovss(xmm2, ptr[rip + consts_ + 16]);
    vdivss(xmm2, xmm2, xmm1);
    vmovss(xmm3, ptr[rip + consts_ + 20]);
    vdivss(xmm3, xmm3, xmm2);
    vmovss(ptr[r10], xmm3);
  }

  // xmm0 <- the maximum of ymm0's 8 lanes, in every lane; uses xmm1.
  void emit_hmax_ymm0() {
    vextractf128(xmm1, ymm0, 1);
    vmaxps(xmm0, xmm0, xmm1);
    vshufps(xmm1, xmm0, xmm0, 0x4e);
    vmaxps(xmm0, xmm0, xmm1);
    vshufps(xmm1, xmm0, xmm0, 0xb1);
    vmaxps(xmm0, xmm0, xmm1);
  }
};

}  // namespace ckjit::jit
