// tests/read/ccq_forms.hpp — the forms a CCQ test runs, as types (so one test body covers every form).
#pragma once
#include <linea/linea.hpp>

namespace linea::testing {

struct recurrent_form {
  static constexpr const char* name = "recurrent";
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    linea::recurrent<Rule, Read>(a);
  }
};

}  // namespace linea::testing
