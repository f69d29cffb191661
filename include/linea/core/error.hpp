// linea/core/error.hpp — the one exception type of the library.
#pragma once
#include <stdexcept>
#include <string>

namespace linea {

// Thrown for every bad argument (before anything is written) and for backend failures.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error("linea: " + what) {}
};

}  // namespace linea
