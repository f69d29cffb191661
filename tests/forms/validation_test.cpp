// The chunkwise form's own argument checks: a linea::error that names the argument, before anything is written.
#include <string>

#include <doctest/doctest.h>

#include "support/inputs.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

// Runs chunkwise on `a`, expects a linea::error whose message names `argument`, and checks o was not touched.
template <class Rule, class Case>
void expect_rejected(Case& c, const arguments<float>& a, const std::string& argument) {
  for (auto& x : c.o.values()) x = 7.0f;
  std::string message;
  try {
    chunkwise<Rule>(a);
  } catch (const error& e) {
    message = e.what();
  }
  INFO("message: ", message);
  CHECK(message.find("'" + argument + "'") != std::string::npos);
  bool untouched = true;
  for (float x : c.o.values()) untouched = untouched && x == 7.0f;
  CHECK(untouched);
}

}  // namespace

TEST_CASE("chunkwise rejects chunk sizes other than 16, 32, 64, 128") {
  auto c = random_case<gated_delta, float>::make({.B = 1, .T = 40, .H = 1, .HV = 1, .K = 8, .V = 8});
  for (index_t C : {0, 8, 48, 50, 256}) {
    auto a = c.args();
    a.chunk_size = C;
    expect_rejected<gated_delta>(c, a, "chunk_size");
  }
  for (index_t C : {16, 32, 64, 128}) {
    auto a = c.args();
    a.chunk_size = C;
    CHECK_NOTHROW(chunkwise<gated_delta>(a));
  }
}

TEST_CASE("chunkwise checks the checkpoints' shape [N, max_chunks, HV, K, V]") {
  // Packed lengths 40 and 70 at chunk size 32: 2 and 3 chunks, so max_chunks = 3.
  auto c = random_case<kda, float>::make({.H = 1, .HV = 2, .K = 8, .V = 4, .seqlens = {40, 70}});
  auto a = c.args();
  a.chunk_size = 32;
  tensor<float, 5> good({2, 3, 2, 8, 4});
  a.checkpoints = good;
  CHECK_NOTHROW(chunkwise<kda>(a));
  for (auto ext : {std::array<index_t, 5>{2, 2, 2, 8, 4}, std::array<index_t, 5>{2, 4, 2, 8, 4},
                   std::array<index_t, 5>{1, 3, 2, 8, 4}, std::array<index_t, 5>{2, 3, 2, 4, 8}}) {
    tensor<float, 5> bad(ext);
    a.checkpoints = bad;
    expect_rejected<kda>(c, a, "checkpoints");
  }
}

TEST_CASE("chunkwise rejects the decode step's state_indices and the rule's own bad arguments") {
  auto c = random_case<gla, float>::make({.B = 2, .T = 20, .H = 1, .HV = 1, .K = 8, .V = 8});
  std::vector<std::int32_t> idx{0, 1};
  auto a = c.args();
  a.state_indices = idx;
  expect_rejected<gla>(c, a, "state_indices");
  auto b = c.args();
  b.gk = {};  // gla needs a per-key gate: validate<Rule, Read> runs first
  expect_rejected<gla>(c, b, "gk");
  auto t = c.args();
  t.threads = -1;
  expect_rejected<gla>(c, t, "threads");
}
