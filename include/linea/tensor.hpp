// linea/tensor.hpp — a small owning tensor for tests and examples (the library itself takes views).
#pragma once
#include <array>
#include <vector>

#include "core/view.hpp"

namespace linea {

template <class T, int Rank>
class tensor {
 public:
  tensor() = default;
  explicit tensor(const std::array<index_t, Rank>& extents, T fill = T(0)) : extents_(extents) {
    index_t n = 1;
    for (index_t e : extents) n *= e;
    data_.assign(static_cast<std::size_t>(n), fill);
  }
  view<T, Rank> view_of() { return contiguous<Rank>(data_.data(), extents_); }
  view<const T, Rank> view_of() const { return contiguous<Rank>(data_.data(), extents_); }
  operator view<T, Rank>() { return view_of(); }
  operator view<const T, Rank>() const { return view_of(); }

  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }
  std::size_t size() const { return data_.size(); }
  index_t extent(int r) const { return extents_[r]; }
  const std::array<index_t, Rank>& extents() const { return extents_; }
  std::vector<T>& values() { return data_; }
  const std::vector<T>& values() const { return data_; }
  template <class... I>
  T& operator()(I... i) { return view_of()(i...); }
  template <class... I>
  const T& operator()(I... i) const { return view_of()(i...); }

 private:
  std::array<index_t, Rank> extents_{};
  std::vector<T> data_;
};

}  // namespace linea
