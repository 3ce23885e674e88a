#pragma once
// A std::vector allocator whose storage starts on a cache line: full-width vector loads of panels
// packed at run time then never split a line (an unaligned zmm panel load costs ~20% of a tile's
// speed on Sapphire Rapids).
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace ckjit {

template <class T>
struct CacheAlignedAllocator {
  using value_type = T;
  CacheAlignedAllocator() = default;
  template <class U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>&) {}
  T* allocate(std::size_t n) {
    const std::size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes ? bytes : 64);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) { std::free(p); }
  template <class U>
  bool operator==(const CacheAlignedAllocator<U>&) const { return true; }
};

template <class T>
using AlignedVector = std::vector<T, CacheAlignedAllocator<T>>;

}  // namespace ckjit
