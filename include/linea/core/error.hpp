// linea/core/error.hpp — the one exception type of the library.
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>

namespace linea {

// Thrown for every bad argument (before anything is written) and for backend failures.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error("linea: " + what) {}
};

namespace detail {
// A number for an error message, as %g writes it (1e+300, not std::to_string's 301 digits; 1e-09, not 0.000000).
inline std::string number_string(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", x);
  return text;
}
}  // namespace detail

}  // namespace linea
