// tests/support/rejection.hpp — checking that bad arguments are rejected: a linea::error is thrown before
// anything is written, and its message names the argument (and the shapes where they are the problem).
//
// The validation tests are tables of bad inputs, one row each: what is broken, a lambda that breaks a valid
// arguments struct, and the fragments the message must contain. One loop runs every row:
//
//   const bad_input table[] = {
//       {.what = "k with another shape than q", .check = recurrent_rejects<kda>,
//        .breaks = [](auto& a) { a.k = with_extent(a.k, 3, 15); }, .words = {"'k'", "[2, 10, 2, 15]"}},
//   };
//   check_rejected(table);   // every row, each named in a failure's message
//
// `check` (here recurrent_rejects<kda>, written by the test file) makes the valid case, applies `breaks` and
// calls expect_rejected once per form and backend that must refuse the arguments.
#pragma once
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "support/inputs.hpp"
#include "support/outputs.hpp"

namespace linea::testing {

// The message of the linea::error that `call` throws, or "" when it throws none.
template <class F>
std::string message_of(F&& call) {
  try {
    call();
  } catch (const linea::error& e) {
    return e.what();
  }
  return "";
}

// Checks that `call` throws a linea::error whose message contains every one of `words`; returns whether it threw.
template <class F>
bool expect_error(F&& call, const std::vector<std::string>& words) {
  const std::string message = message_of(call);
  INFO("message: ", message);
  CHECK_MESSAGE(!message.empty(), "no linea::error was thrown");
  if (message.empty()) return false;
  for (const std::string& w : words) {
    INFO("expected in the message: ", w);
    CHECK(message.find(w) != std::string::npos);
  }
  return true;
}

// Whether every element still holds `sentinel` (outputs are pre-filled with it).
template <class X, int R>
bool untouched(const tensor<X, R>& x) {
  return std::all_of(x.values().begin(), x.values().end(), [](X e) { return e == X(sentinel); });
}
// The same through a view (any strides); a view that is not given, or has no elements, is untouched.
template <class X, int R>
bool untouched(const view<X, R>& x) {
  if (x.ptr == nullptr) return true;
  for (int r = 0; r < R; ++r)
    if (x.ext[r] <= 0) return true;
  index_t i[R] = {};
  for (;;) {
    index_t off = 0;
    for (int r = 0; r < R; ++r) off += i[r] * x.str[r];
    if (x.ptr[off] != X(sentinel)) return false;
    int r = R - 1;
    while (r >= 0 && ++i[r] == x.ext[r]) i[r--] = 0;
    if (r < 0) return true;
  }
}

// A random case whose outputs (o, residual, final state) are pre-filled with `sentinel`.
template <class Rule, class T = float>
random_case<Rule, T> sentinel_case(const case_shape& s) {
  auto c = random_case<Rule, T>::make(s);
  std::fill(c.o.values().begin(), c.o.values().end(), T(sentinel));
  std::fill(c.residual.values().begin(), c.residual.values().end(), T(sentinel));
  std::fill(c.ht.values().begin(), c.ht.values().end(), accumulate_t<T>(sentinel));
  return c;
}

// A copy of view x with one extent changed (same pointer and strides).
template <class T, int R>
view<T, R> with_extent(view<T, R> x, int axis, index_t extent) {
  x.ext[axis] = extent;
  return x;
}

// Checks that `call` (a form run on the broken arguments a over case c) is rejected with `words`, and that
// nothing was written: neither the case's outputs nor whatever a's output views point at instead.
template <class C, class A, class F>
void expect_rejected(const C& c, const A& a, F&& call, const std::vector<std::string>& words) {
  if (!expect_error(call, words)) return;
  CHECK(untouched(c.o));
  CHECK(untouched(c.residual));
  CHECK(untouched(c.ht));
  INFO("the outputs the broken arguments point at: o, residual, final_state, checkpoints");
  CHECK((untouched(a.o) && untouched(a.residual) && untouched(a.final_state) && untouched(a.checkpoints)));
}

// One bad input. `check` makes a valid case of `shape` (outputs at the sentinel), applies `breaks` to its
// arguments and expects every form and backend it stands for to reject them with `words`.
template <class A>
struct bad_input_of {
  std::string what;                                      // what is broken, as a failure names the row
  void (*check)(const bad_input_of&) = nullptr;          // the rule and the form(s) that must reject it
  std::function<void(A&)> breaks;                        // turns valid arguments into bad ones
  std::vector<std::string> words;                        // the argument's name, the shapes, ...
  std::optional<case_shape> shape;                       // the valid case it starts from (else the table's)
};

// The loop every validation table runs: one row after the other, each named in a failure's message.
template <class Row, std::size_t N>
void check_rejected(const Row (&table)[N]) {
  for (const Row& row : table) {
    INFO("bad input: ", row.what);
    row.check(row);
  }
}

}  // namespace linea::testing
