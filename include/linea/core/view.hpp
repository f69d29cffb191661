// linea/core/view.hpp — a non-owning strided view: a pointer plus extents and strides (mdspan's vocabulary).
//
// Views are in the logical order (b, t, h, d). fla's time-major [B,T,H,D] is the contiguous layout;
// head-first [B,H,T,D] is the same view with other strides; a stride of 0 broadcasts (g_gamma is a
// gate view with stride 0 over b and t). An empty view (the default: null pointer, no shape) means "not given".
#pragma once
#include <array>
#include <cstddef>
#include <initializer_list>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>

#include "../config.hpp"
#include "error.hpp"

namespace linea {

template <class T, int Rank>
struct view {
  static_assert(Rank >= 1 && Rank <= 6, "linea::view supports ranks 1..6");
  using element_type = T;
  static constexpr int rank = Rank;

  T* ptr = nullptr;
  index_t ext[Rank] = {};
  index_t str[Rank] = {};

  LINEA_HD T* data_handle() const { return ptr; }
  LINEA_HD index_t extent(int r) const { return ext[r]; }
  LINEA_HD index_t stride(int r) const { return str[r]; }
  // "Not given" is the default view: a null pointer and no shape. A view with a shape but no elements (T = 0)
  // is given even when its pointer is null, as torch's empty tensors report data_ptr() == 0; validate()
  // rejects a null pointer only where there are elements to read or write.
  LINEA_HD bool empty() const {
    if (ptr != nullptr) return false;
    for (int r = 0; r < Rank; ++r)
      if (ext[r] != 0) return false;
    return true;
  }
  LINEA_HD explicit operator bool() const { return !empty(); }

  LINEA_HD index_t size() const {
    index_t n = 1;
    for (int r = 0; r < Rank; ++r) n *= ext[r];
    return n;
  }

  template <class... I>
  LINEA_HD T& operator()(I... i) const {
    static_assert(sizeof...(I) == Rank, "linea::view: one index per extent");
    const index_t idx[Rank] = {static_cast<index_t>(i)...};
    index_t off = 0;
    for (int r = 0; r < Rank; ++r) off += idx[r] * str[r];
    return ptr[off];
  }

  // Pointer to the innermost row at the given outer coordinates (all but the last index).
  template <class... I>
  LINEA_HD T* row(I... i) const {
    static_assert(sizeof...(I) == Rank - 1, "linea::view::row: one index per outer extent");
    const index_t idx[Rank - 1] = {static_cast<index_t>(i)...};
    index_t off = 0;
    for (int r = 0; r < Rank - 1; ++r) off += idx[r] * str[r];
    return ptr + off;
  }

  // view<T> converts to view<const T>.
  template <class U = T, class = std::enable_if_t<!std::is_const_v<U>>>
  LINEA_HD operator view<const U, Rank>() const {
    view<const U, Rank> c;
    c.ptr = ptr;
    for (int r = 0; r < Rank; ++r) {
      c.ext[r] = ext[r];
      c.str[r] = str[r];
    }
    return c;
  }
};

// Row-major (C-contiguous) view over `data` with the given extents.
template <int Rank, class T>
view<T, Rank> contiguous(T* data, const std::array<index_t, Rank>& extents) {
  view<T, Rank> v;
  v.ptr = data;
  index_t s = 1;
  for (int r = Rank - 1; r >= 0; --r) {
    v.ext[r] = extents[r];
    v.str[r] = s;
    s *= extents[r];
  }
  return v;
}

// View with explicit extents and strides (in elements).
template <int Rank, class T>
view<T, Rank> strided(T* data, const std::array<index_t, Rank>& extents,
                      const std::array<index_t, Rank>& strides) {
  view<T, Rank> v;
  v.ptr = data;
  for (int r = 0; r < Rank; ++r) {
    v.ext[r] = extents[r];
    v.str[r] = strides[r];
  }
  return v;
}

// "[2, 100, 4, 64]": how errors print a shape.
template <int Rank>
std::string extents_string(const index_t (&e)[Rank]) {
  std::string s = "[";
  for (int r = 0; r < Rank; ++r) s += (r ? ", " : "") + std::to_string(e[r]);
  return s + "]";
}

template <class T, int Rank>
std::string shape_string(const view<T, Rank>& v) {
  return extents_string<Rank>(v.ext);
}

// The element offsets from ptr of a view's lowest and highest element: the sums of (extent − 1)·stride over its
// negative and its positive strides. False where a product or a sum overflows index_t (such a view describes no
// memory). For views with elements (every extent > 0).
template <class T, int Rank>
bool element_reach(const view<T, Rank>& v, index_t& low, index_t& high) {
  low = high = 0;
  for (int r = 0; r < Rank; ++r) {
    index_t reach = 0;
    if (__builtin_mul_overflow(v.ext[r] - 1, v.str[r], &reach)) return false;
    index_t& side = reach < 0 ? low : high;
    if (__builtin_add_overflow(side, reach, &side)) return false;
  }
  return true;
}

// ---- checked views over a buffer of known size -------------------------------------------------------------
//
//   std::vector<float> q_buf(B * T * H * K);
//   auto q = linea::contiguous<4>(std::span(q_buf), {B, T, H, K}, "q");   // throws if q_buf is too small
//
// The view must stay inside the span: every element its extents and strides reach lies in [0, size). Otherwise
// linea::error names the view, its extents and strides, and the span's size.
template <class T, int Rank, std::size_t E>
view<T, Rank> checked(std::span<T, E> data, view<T, Rank> v, const char* name) {
  bool elements = true;
  for (int r = 0; r < Rank; ++r) {
    if (v.ext[r] < 0)
      throw error(std::string("view '") + name + "' has a negative extent: " + shape_string(v));
    if (v.ext[r] == 0) elements = false;
  }
  index_t low = 0, high = 0;
  if (elements && (!element_reach(v, low, high) || low < 0 || high >= static_cast<index_t>(data.size())))
    throw error(std::string("view '") + name + "' with extents " + shape_string(v) + " and strides " +
                extents_string<Rank>(v.str) + " reaches elements " + std::to_string(low) + " .. " +
                std::to_string(high) + ", but its span holds " + std::to_string(data.size()));
  return v;
}

// Row-major view over a span, size checked.
template <int Rank, class T, std::size_t E>
view<T, Rank> contiguous(std::span<T, E> data, const std::array<index_t, Rank>& extents, const char* name = "view") {
  return checked(data, contiguous<Rank>(data.data(), extents), name);
}

// Strided view over a span, size checked.
template <int Rank, class T, std::size_t E>
view<T, Rank> strided(std::span<T, E> data, const std::array<index_t, Rank>& extents,
                      const std::array<index_t, Rank>& strides, const char* name = "view") {
  return checked(data, strided<Rank>(data.data(), extents, strides), name);
}

// The same over a contiguous container (std::vector, std::array): contiguous<4>(buffer, {B, T, H, K}, "q").
// (A C array is not taken here: it decays to a pointer, as before these overloads, so that the pointer overload
// is not ambiguous with this one.)
template <int Rank, std::ranges::contiguous_range R>
  requires(std::ranges::sized_range<R> && !std::is_array_v<R>)
auto contiguous(R& data, const std::array<index_t, Rank>& extents, const char* name = "view") {
  return contiguous<Rank>(std::span(data), extents, name);
}
template <int Rank, std::ranges::contiguous_range R>
  requires(std::ranges::sized_range<R> && !std::is_array_v<R>)
auto strided(R& data, const std::array<index_t, Rank>& extents, const std::array<index_t, Rank>& strides,
             const char* name = "view") {
  return strided<Rank>(std::span(data), extents, strides, name);
}

}  // namespace linea
