// linea/backend/cpu/page_allocator.hpp — an allocator whose blocks start on a 4 KiB page, for scratch whose
// placement relative to other scratch matters to the core's memory disambiguation (backward_head.hpp's tiles:
// a store and a later load 4 KiB apart look alike to it and the load waits).
#pragma once
#include <cstddef>
#include <new>

#include "../isa.hpp"

namespace linea::cpu_backend::inline LINEA_ISA {

template <class T>
struct page_allocator {
  using value_type = T;
  static constexpr std::align_val_t page{4096};

  page_allocator() = default;
  template <class U>
  page_allocator(const page_allocator<U>&) noexcept {}

  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), page)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, page); }

  template <class U>
  bool operator==(const page_allocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace linea::cpu_backend
