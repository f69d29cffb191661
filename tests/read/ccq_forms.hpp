// tests/read/ccq_forms.hpp — the forms a CCQ test runs, as types (so one test body covers every form).
#pragma once
#include <linea/linea.hpp>
#include <linea/forms/chunkwise.hpp>

namespace linea::testing {

struct recurrent_form {
  static constexpr const char* name = "recurrent";
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    linea::recurrent<Rule, Read>(a);
  }
};

// The chunkwise form at a given chunk size (16 puts several chunk boundaries inside a short test sequence).
template <index_t ChunkSize>
struct chunkwise_form {
  static constexpr const char* name = "chunkwise";
  template <class Rule, class Read, class T, class S>
  static void run(arguments<T, S> a) {
    a.chunk_size = ChunkSize;
    linea::chunkwise<Rule, Read>(a);
  }
};

}  // namespace linea::testing
