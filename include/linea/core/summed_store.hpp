// linea/core/summed_store.hpp — stores gradients summed in a wide type (float64 in the reference and the CPU
// backward) into a caller's view. A view with stride 0 over an extent > 1 (dg of g_gamma) covers one element from
// several positions: that element receives their sum, added in the wide type in logical order and stored once (a
// 16-bit type has no arithmetic of its own, and a running 16-bit sum would round at every step).
#pragma once
#include <algorithm>
#include <array>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "../backend/isa.hpp"
#include "aliasing.hpp"
#include "sum_tensor.hpp"

// In the instruction-set namespace: its loops are compiled for the translation unit's -march (backend/isa.hpp).
namespace linea::detail::inline LINEA_ISA {

// Calls f(i0, …, i_{Rank−1}) for every position of `ext`, the last index fastest (logical order).
template <int Rank, class F>
void for_each_position(const std::array<index_t, Rank>& ext, F&& f) {
  index_t total = 1;
  for (index_t e : ext) total *= e;
  std::array<index_t, Rank> i{};
  for (index_t flat = 0; flat < total; ++flat) {
    for (index_t r = flat, d = Rank - 1; d >= 0; --d) i[d] = r % ext[d], r /= ext[d];
    std::apply(f, i);
  }
}

// Every position of `out` from `sum` at its logical index (the two have the same extents).
template <class Wide, class X, int Rank>
void store_summed(const sum_tensor<Wide, Rank>& sum, const view<X, Rank>& out) {
  if (out.empty()) return;
  std::array<index_t, Rank> ext{};
  for (int r = 0; r < Rank; ++r) ext[r] = out.extent(r);
  if (shared_element_axis(out) < 0) {
    for_each_position<Rank>(ext, [&](auto... i) { out(i...) = static_cast<X>(sum(i...)); });
    return;
  }
  std::vector<std::pair<X*, Wide>> at;  // (element, term) in logical order; a stable sort keeps that order per element
  for_each_position<Rank>(ext, [&](auto... i) { at.emplace_back(&out(i...), sum(i...)); });
  std::stable_sort(at.begin(), at.end(), [](const auto& x, const auto& y) { return std::less<X*>()(x.first, y.first); });
  for (std::size_t b = 0, e; b < at.size(); b = e) {
    Wide s = 0;
    for (e = b; e < at.size() && at[e].first == at[b].first; ++e) s += at[e].second;
    *at[b].first = static_cast<X>(s);
  }
}

}  // namespace linea::detail::inline LINEA_ISA
