// linea/backend/cpu/simd.hpp — the few vector operations the CPU kernels use, over xsimd or one scalar lane.
//
// lanes<R, Arch> wraps xsimd::batch<R, Arch> (Arch an xsimd tag: avx512f, avx2, fma3<avx2>, sse2, ...);
// lanes<R, scalar_arch> is the same interface over a plain R, so every kernel also compiles where xsimd has
// no instruction set (and can be tested against the wide ones on any machine).
#pragma once
#include <cmath>
#include <string_view>
#include <type_traits>

#include "third_party.hpp"  // xsimd

#include "../isa.hpp"
#include "../../core/storage.hpp"
#include "../tags.hpp"

LINEA_SIMD_WARNINGS_BEGIN
namespace linea::cpu_backend::inline LINEA_ISA {

// The widest xsimd instruction set the compiler targets (-march=native: AVX-512 on an AVX-512 host), or one
// scalar lane when xsimd has none.
using native_arch_t = std::conditional_t<std::is_same_v<xsimd::default_arch, xsimd::unavailable>,
                                         backend::scalar_arch, xsimd::default_arch>;
template <class Arch>
constexpr std::string_view arch_name() {
  if constexpr (std::is_same_v<Arch, backend::scalar_arch>) return "scalar";
  else return Arch::name();
}
// The inline namespace (backend/isa.hpp) names the same instruction set that xsimd chose (nvcc units: isa_nvcc).
static_assert(std::string_view(LINEA_ISA_NAME) == "nvcc" || arch_name<native_arch_t>() == LINEA_ISA_NAME,
              "linea: backend/isa.hpp and xsimd disagree on the instruction set of this translation unit");
template <class Arch>
using resolve_arch = std::conditional_t<std::is_same_v<Arch, backend::native_arch>, native_arch_t, Arch>;

template <class R, class Arch>
struct lanes {
  using type = xsimd::batch<R, Arch>;
  static constexpr int size = static_cast<int>(type::size);
  static type load(const R* p) { return type::load_unaligned(p); }
  static void store(R* p, const type& x) { x.store_unaligned(p); }
  static type splat(R x) { return type(x); }
  static type at(const R* row, index_t i) { return load(row + i); }  // lanes [i, i + size) of a row
  static type fma(const type& a, const type& b, const type& c) { return xsimd::fma(a, b, c); }
  static type exp(const type& x) { return xsimd::exp(x); }
  static R min(const type& x) {  // horizontal minimum
    alignas(64) R buf[size];
    x.store_unaligned(buf);
    R m = buf[0];
    for (int l = 1; l < size; ++l) m = buf[l] < m ? buf[l] : m;
    return m;
  }
};

template <class R>
struct lanes<R, backend::scalar_arch> {
  using type = R;
  static constexpr int size = 1;
  static type load(const R* p) { return *p; }
  static void store(R* p, const type& x) { *p = x; }
  static type splat(R x) { return x; }
  static type at(const R* row, index_t i) { return row[i]; }
  static type fma(const type& a, const type& b, const type& c) { return std::fma(a, b, c); }
  static type exp(const type& x) { return std::exp(x); }
  static R min(const type& x) { return x; }
};

// y[i] = exp(x[i]) for n entries (vector exp where the arch has one).
template <class R, class Arch>
void exp_n(const R* x, R* y, index_t n) {
  using L = lanes<R, Arch>;
  index_t i = 0;
  for (; i + L::size <= n; i += L::size) L::store(y + i, L::exp(L::load(x + i)));
  for (; i < n; ++i) y[i] = std::exp(x[i]);
}

// One stored value as R: double converts directly, float and the 16-bit storage types through float.
template <class R, class T>
inline R to_compute(const T& x) {
  if constexpr (std::is_same_v<std::remove_cv_t<T>, double>) return static_cast<R>(x);
  else return static_cast<R>(static_cast<float>(x));
}

// Converting row copies: a contiguous row of storage type T into R and back (bf16/fp16 are bit-shuffles
// the compiler vectorises; float/double are plain copies or casts).
template <class R, class T>
inline void load_row(const T* src, index_t stride, R* dst, index_t n) {
  if (stride == 1) {
    for (index_t i = 0; i < n; ++i) dst[i] = to_compute<R>(src[i]);
  } else {
    for (index_t i = 0; i < n; ++i) dst[i] = to_compute<R>(src[i * stride]);
  }
}
template <class T, class R>
inline void store_row(const R* src, T* dst, index_t stride, index_t n) {
  if (stride == 1) {
    for (index_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
  } else {
    for (index_t i = 0; i < n; ++i) dst[i * stride] = static_cast<T>(src[i]);
  }
}

}  // namespace linea::cpu_backend
LINEA_SIMD_WARNINGS_END
