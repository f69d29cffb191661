// linea/core/sum_tensor.hpp — the owning, row-major accumulator that the backward passes sum gradients into (the
// reference's gradient_sums, the CPU backward's backward_sums) before core/summed_store.hpp stores them.
//
// Why not linea::tensor (tensor.hpp, the tests' and examples' tensor): that class is outside the instruction-set
// namespace (backend/isa.hpp), so two units built with different -m flags that both instantiate a backward would
// share its out-of-line constructor (a fill loop the compiler may vectorise), and the linker would keep one unit's
// copy for both — the symbol that kept the CCQ backward out of the two-instruction-set test (tests/backend/isa).
// This one lives in the ISA namespace, like the code that fills it, and needs only the standard library.
#pragma once
#include <array>
#include <cstddef>
#include <vector>

#include "../backend/isa.hpp"
#include "../config.hpp"

namespace linea::detail::inline LINEA_ISA {

template <class T, int Rank>
class sum_tensor {
 public:
  sum_tensor() = default;  // empty: a sum nobody asked for
  explicit sum_tensor(const std::array<index_t, Rank>& extents) : extents_(extents) {
    index_t n = 1;
    for (index_t e : extents) n *= e;
    data_.assign(static_cast<std::size_t>(n), T(0));
  }

  index_t extent(int r) const { return extents_[static_cast<std::size_t>(r)]; }
  bool empty() const { return data_.empty(); }

  template <class... I>
  T& operator()(I... i) {
    return data_[offset(i...)];
  }
  template <class... I>
  const T& operator()(I... i) const {
    return data_[offset(i...)];
  }

 private:
  template <class... I>
  std::size_t offset(I... i) const {
    static_assert(sizeof...(I) == Rank, "sum_tensor: one index per dimension");
    const std::array<index_t, Rank> at{static_cast<index_t>(i)...};
    index_t flat = 0;
    for (std::size_t r = 0; r < std::size_t(Rank); ++r) flat = flat * extents_[r] + at[r];
    return static_cast<std::size_t>(flat);
  }

  std::array<index_t, Rank> extents_{};
  std::vector<T> data_;
};

}  // namespace linea::detail::inline LINEA_ISA
