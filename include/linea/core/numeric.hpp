// linea/core/numeric.hpp — which type a computation accumulates in, and small math helpers shared by all forms.
#pragma once
#include <cmath>
#include <type_traits>

#include "../config.hpp"

namespace linea {

// States and accumulations are kept in at least float32: float64 for float64 inputs, float32 otherwise
// (SPEC §1). Storage types such as bf16/fp16 specialise this to float.
template <class T>
struct accumulate_type {
  using type = std::conditional_t<std::is_same_v<std::remove_cv_t<T>, double>, double, float>;
};
template <class T>
using accumulate_t = typename accumulate_type<std::remove_cv_t<T>>::type;

// Converting loads and stores: storage types only need explicit conversions to and from float.
template <class Acc, class T>
LINEA_HD inline Acc load_as(const T& x) {
  return static_cast<Acc>(x);
}
template <class T, class Acc>
LINEA_HD inline T store_as(Acc x) {
  return static_cast<T>(x);
}

template <class R>
LINEA_HD inline R sigmoid(R x) {
  using std::exp;
  return R(1) / (R(1) + exp(-x));
}

// softplus(x) = log(1 + e^x), and x itself above 20 (fla's threshold; SPEC §1).
template <class R>
LINEA_HD inline R softplus(R x) {
  using std::exp;
  using std::log1p;
  return x > R(20) ? x : log1p(exp(x));
}

// 1 / z_t for the CCQ statistics (SPEC §3: μ_t = m_t / z_t, Σ_t = C_t / z_t − μ_t μ_tᵀ), or 0 where z_t = 0: z_t is
// the keys' total weight, and keys of no total weight read as Σ_t = 0 and μ_t = 0 (q̃_t = q_t) in every form, forward
// and backward (read/ccq_statistics.hpp). After any token z_t = a_t z_{t−1} + 1 ≥ 1 for z_0 ≥ 0; only a caller's
// z_0 < 0 can reach z_t = 0 inside a sequence.
template <class R>
LINEA_HD inline R inverse_key_weight(R z) {
  return z == R(0) ? R(0) : R(1) / z;
}

}  // namespace linea
