#pragma once
// One block of memory for all activations of a run, planned up front: every buffer is reserved
// by name and size before the first token, then the block is allocated once (64-byte aligned
// slices). Nothing is allocated per token.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace ckjit::graph {

class Arena {
 public:
  // Reserves `bytes`; returns a slot id to look the pointer up after commit().
  size_t reserve(std::string name, size_t bytes) {
    slots_.push_back({std::move(name), total_, bytes});
    total_ += (bytes + 63) / 64 * 64;
    return slots_.size() - 1;
  }
  void commit() {
    block_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, std::max<size_t>(64, total_))));
    if (!block_) throw std::bad_alloc();
  }
  template <class T> T* get(size_t slot) const { return reinterpret_cast<T*>(block_.get() + slots_[slot].offset); }
  size_t bytes() const { return total_; }

 private:
  struct Slot { std::string name; size_t offset, bytes; };
  struct Free { void operator()(uint8_t* p) const { std::free(p); } };
  std::vector<Slot> slots_;
  size_t total_ = 0;
  std::unique_ptr<uint8_t, Free> block_;
};

}  // namespace ckjit::graph
