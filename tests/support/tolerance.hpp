// tests/support/tolerance.hpp — SPEC.md §5, stated once: relative error ‖x − ref‖ / ‖ref‖ against float64.
#pragma once
#include <cmath>
#include <type_traits>

#include <linea/config.hpp>

namespace linea::testing {

struct tolerance {
  static constexpr double float64 = 1e-12;
  static constexpr double float32 = 1e-5;        // up to T = 4096
  static constexpr double float32_long = 1e-4;   // up to T = 65536
  static constexpr double half_storage = 1e-2;   // bf16 / fp16 storage with float32 accumulation
};

// The §5 bound for input type T at sequence length T_len.
template <class T>
constexpr double tolerance_for(index_t T_len = 0) {
  if constexpr (std::is_same_v<T, double>) return tolerance::float64;
  else if constexpr (std::is_same_v<T, float>) return T_len > 4096 ? tolerance::float32_long : tolerance::float32;
  else return tolerance::half_storage;
}

}  // namespace linea::testing

namespace linea::testing {

// SPEC.md §6, stated once: gradients, ‖x − ref‖ / ‖ref‖ per input tensor against the float64 gradient.
struct gradient_tolerance {
  static constexpr double float64 = 1e-10;
  static constexpr double float32 = 1e-4;       // up to T = 4096
  static constexpr double half_storage = 2e-2;  // bf16 / fp16 inputs
};

template <class T>
constexpr double gradient_tolerance_for() {
  if constexpr (std::is_same_v<T, double>) return gradient_tolerance::float64;
  else if constexpr (std::is_same_v<T, float>) return gradient_tolerance::float32;
  else return gradient_tolerance::half_storage;
}

}  // namespace linea::testing
