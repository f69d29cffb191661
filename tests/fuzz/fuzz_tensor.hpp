// tests/fuzz/fuzz_tensor.hpp — the fuzz harness's buffers: a tensor in a random memory layout (any order of the
// dimensions, padding between them) inside a buffer whose every byte the harness can compare before and after.
#pragma once
#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include <linea/core/view.hpp>

namespace linea::fuzz {

using rng_t = std::mt19937_64;

// A float32 NaN with a payload no computation produces: what every output byte starts as.
inline float canary() {
  const std::uint32_t bits = 0x7fa5a5a5u;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <class X, int R>
struct fuzz_tensor {
  std::vector<X> mem;  // the whole buffer, gaps included
  std::array<index_t, R> ext{}, str{};
  index_t offset = 0;  // where element (0, ..., 0) sits in mem

  view<X, R> out() { return make<X>(mem.data()); }
  view<const X, R> in() const { return make<const X>(mem.data()); }
  index_t size() const {
    index_t n = 1;
    for (index_t e : ext) n *= e;
    return n;
  }
  // Element i in logical row-major order.
  X& at(index_t i) { return mem[static_cast<std::size_t>(offset_of(i))]; }
  X at(index_t i) const { return mem[static_cast<std::size_t>(offset_of(i))]; }
  index_t offset_of(index_t i) const {
    index_t off = offset;
    for (int r = R - 1; r >= 0; --r) {
      off += (i % ext[r]) * str[r];
      i /= ext[r];
    }
    return off;
  }

 private:
  template <class Y>
  view<Y, R> make(Y* base) const {
    view<Y, R> v;
    v.ptr = base + offset;
    for (int r = 0; r < R; ++r) v.ext[r] = ext[r], v.str[r] = str[r];
    return v;
  }
};

// A tensor of the given extents in a random layout: contiguous half of the time, otherwise the dimensions in a
// random memory order (the last one innermost three times in four) with 0-2 elements of padding after each.
// `fill` is written into every element of the buffer (gaps too). any_layout = false: always contiguous.
template <class X, int R>
fuzz_tensor<X, R> random_layout(rng_t& rng, const std::array<index_t, R>& ext, X fill, bool any_layout = true) {
  fuzz_tensor<X, R> t;
  t.ext = ext;
  std::array<int, R> order;  // order[0] outermost
  std::iota(order.begin(), order.end(), 0);
  const bool plain = !any_layout || std::uniform_int_distribution<int>(0, 1)(rng) == 0;
  if (!plain) {
    std::shuffle(order.begin(), order.end(), rng);
    if (std::uniform_int_distribution<int>(0, 3)(rng) != 0) {  // move the last dimension innermost
      auto last = std::find(order.begin(), order.end(), R - 1);
      std::rotate(last, last + 1, order.end());
    }
  }
  index_t stride = 1;
  for (int j = R - 1; j >= 0; --j) {
    const int r = order[j];
    t.str[r] = stride;
    const index_t pad = plain ? 0 : std::uniform_int_distribution<index_t>(0, 2)(rng);
    stride *= std::max<index_t>(ext[r], 1) + pad;
  }
  t.mem.assign(static_cast<std::size_t>(stride), fill);
  return t;
}

// The bytes of a buffer, for "nothing was written" checks.
template <class X, int R>
std::vector<unsigned char> bytes_of(const fuzz_tensor<X, R>& t) {
  std::vector<unsigned char> b(t.mem.size() * sizeof(X));
  if (!b.empty()) std::memcpy(b.data(), t.mem.data(), b.size());
  return b;
}

// Whether every byte of t's buffer outside its elements still equals `before` (writes outside the view).
template <class X, int R>
bool gaps_unchanged(const fuzz_tensor<X, R>& t, const std::vector<unsigned char>& before) {
  std::vector<bool> covered(t.mem.size(), false);
  for (index_t i = 0; i < t.size(); ++i) covered[static_cast<std::size_t>(t.offset_of(i))] = true;
  for (std::size_t e = 0; e < t.mem.size(); ++e)
    if (!covered[e] && std::memcmp(&t.mem[e], &before[e * sizeof(X)], sizeof(X)) != 0) return false;
  return true;
}

}  // namespace linea::fuzz
