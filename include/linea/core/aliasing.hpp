// linea/core/aliasing.hpp — which views may share memory (docs/usage.md, "Aliasing"), checked before anything is written.
//
// Each view is reduced to the bytes it can touch, [lowest element address, highest element address + one element):
// a conservative, O(rank) test. Two views overlap when these ranges intersect, even where a strided layout would
// interleave them without sharing an element; that is the price of a cheap check, and layouts that interleave
// two arguments in one buffer are rare. The only sharing allowed is an exact in-place pair (same address, element
// size, extents and strides) named by the caller. An output view with stride 0 over an extent > 1 writes one
// element from several positions (threads would write over each other) and is rejected.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <span>
#include <sstream>
#include <string>

#include "error.hpp"
#include "view.hpp"

namespace linea::detail {

struct byte_range {
  std::uintptr_t lo = 0, hi = 0;  // [lo, hi); lo == hi: no memory
  bool empty() const { return lo == hi; }
  bool overlaps(const byte_range& o) const { return !empty() && !o.empty() && lo < o.hi && o.lo < hi; }
};

template <class T, int Rank>
byte_range bytes_of(const view<T, Rank>& v) {
  if (v.ptr == nullptr) return {};
  for (int r = 0; r < Rank; ++r)
    if (v.extent(r) <= 0) return {};
  index_t low = 0, high = 0;  // element offsets of the lowest and highest element
  // (validate's expect_data has refused views that wrap; were one to reach here, it would overlap everything)
  if (!element_reach(v, low, high)) return {0, ~std::uintptr_t(0)};
  const auto base = reinterpret_cast<std::uintptr_t>(v.ptr);
  const auto size = static_cast<std::intptr_t>(sizeof(T));
  return {base + static_cast<std::uintptr_t>(low * size), base + static_cast<std::uintptr_t>((high + 1) * size)};
}

template <class T>
byte_range bytes_of(std::span<T> s) {
  if (s.empty()) return {};
  const auto base = reinterpret_cast<std::uintptr_t>(s.data());
  return {base, base + s.size_bytes()};
}

// The same elements in the same order: an exact in-place pair.
template <class A, int RA, class B, int RB>
bool same_elements(const view<A, RA>& x, const view<B, RB>& y) {
  if constexpr (sizeof(A) != sizeof(B) || RA != RB) {
    return false;
  } else {
    if (static_cast<const void*>(x.ptr) != static_cast<const void*>(y.ptr)) return false;
    for (int r = 0; r < RA; ++r)  // (an axis of extent 1 never steps: its stride names no element)
      if (x.extent(r) != y.extent(r) || (x.extent(r) > 1 && x.stride(r) != y.stride(r))) return false;
    return true;
  }
}

template <class V>
std::string describe_memory(const V& v, const char* name) {
  const byte_range b = bytes_of(v);
  std::ostringstream s;
  s << "'" << name << "' (";
  if constexpr (requires { shape_string(v); }) s << "shape " << shape_string(v) << ", ";
  s << "bytes [0x" << std::hex << b.lo << ", 0x" << b.hi << "))";
  return s.str();
}

inline constexpr const char* output_aliasing_rule =
    "an output may share memory with no input and no other output, except exactly in place (o == v, "
    "final_state == initial_state: the same pointer, extents and strides)";

// Throws when output `out` shares memory with `other` (an input, or another output), unless the two are the exact
// in-place pair `in_place` allows; `rule` ends the message.
template <class O, class X>
void expect_disjoint(const O& out, const char* out_name, const X& other, const char* other_name,
                     bool in_place = false, const char* rule = output_aliasing_rule) {
  if (!bytes_of(out).overlaps(bytes_of(other))) return;
  if constexpr (requires { same_elements(out, other); })
    if (in_place && same_elements(out, other)) return;
  throw error(std::string("argument ") + describe_memory(out, out_name) + " overlaps argument " +
              describe_memory(other, other_name) + "; " + rule);
}

// An axis over which two positions of `v` may share one element, or -1 when every position has its own. First an
// axis with stride 0 over an extent > 1; then the O(rank²) sufficient test for distinct elements: with the axes of
// extent > 1 ordered by |stride|, each |stride| exceeds the farthest offset the axes before it reach (a mixed-radix
// layout: every dense, permuted, sliced or padded layout passes). An axis that fails it is returned: its positions
// may land on another axis's elements (a row stride smaller than the row, say). That test is conservative: a rare
// interleaving that still happens to give distinct elements (extents [2, 3], strides [3, 2]) is reported too.
template <class V>
int shared_element_axis(const V& v) {
  for (int r = 0; r < V::rank; ++r)
    if (v.extent(r) > 1 && v.stride(r) == 0) return r;
  int order[V::rank];
  int n = 0;
  for (int r = 0; r < V::rank; ++r) {
    if (v.extent(r) <= 1) continue;
    int at = n++;  // insertion by |stride|
    for (; at > 0 && std::abs(v.stride(order[at - 1])) > std::abs(v.stride(r)); --at) order[at] = order[at - 1];
    order[at] = r;
  }
  index_t reach = 0;  // the farthest offset the axes so far reach
  for (int i = 0; i < n; ++i) {
    const index_t stride = std::abs(v.stride(order[i]));
    if (stride <= reach) return order[i];
    reach += (v.extent(order[i]) - 1) * stride;
  }
  return -1;
}

// An output view must give every position its own element: stride 0 over an extent > 1, or strides that may map
// two positions onto one element (shared_element_axis), are rejected, `why` saying why in the message.
template <class V>
void expect_distinct_elements(const V& out, const char* name,
                              const char* why = "an output needs one element per position (several writers would share one)") {
  if (bytes_of(out).empty()) return;  // no elements (T = 0): nothing is written
  if (const int r = shared_element_axis(out); r >= 0) {
    std::string strides;
    for (int i = 0; i < V::rank; ++i) strides += (i ? ", " : "") + std::to_string(out.stride(i));
    const std::string where = out.stride(r) == 0 ? " and stride 0 over axis " + std::to_string(r)
                                                 : " and strides [" + strides + "] that may put two positions on one "
                                                   "element (axis " + std::to_string(r) + " steps inside the others)";
    throw error(std::string("argument '") + name + "' has shape " + shape_string(out) + where + ": " + why);
  }
}

}  // namespace linea::detail
