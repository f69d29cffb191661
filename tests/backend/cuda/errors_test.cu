// tests/backend/cuda/errors_test.cu — bad arguments are rejected on the host before any launch, naming the argument.
#include <doctest/doctest.h>

#include <string>

#include "backend/cuda/device_case.hpp"
#include "support/compare.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {
std::string message_of(auto&& call) {
  try {
    call();
  } catch (const linea::error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("cuda: a host pointer is rejected, naming the argument") {
  auto c = random_case<gated_delta, float>::make({.B = 1, .T = 8, .H = 1, .HV = 1, .K = 16, .V = 16});
  device_case<gated_delta, float> d{c};
  auto a = d.args(c.args());
  a.v = c.args().v;  // host memory
  const std::string m = message_of([&] { linea::chunkwise<gated_delta, read::identity, backend::cuda>(a); });
  CHECK(m.find("'v'") != std::string::npos);
  CHECK(m.find("host memory") != std::string::npos);
}

TEST_CASE("cuda: shapes are validated before the launch, and outputs stay untouched") {
  auto c = random_case<kda, bf16>::make({.B = 1, .T = 8, .H = 1, .HV = 2, .K = 16, .V = 16});
  device_case<kda, bf16> d{c};
  auto a = d.args(c.args());
  a.gk.ext[3] = 15;  // wrong K
  const std::string m = message_of([&] { linea::recurrent<kda, read::identity, backend::cuda>(a); });
  CHECK(m.find("'gk'") != std::string::npos);
  d.back();
  CHECK(!all_finite(c.o));  // still the poison the test wrote: nothing was launched
}

TEST_CASE("cuda: the chunkwise form states its K, V limit") {
  auto c = random_case<delta, float>::make({.B = 1, .T = 4, .H = 1, .HV = 1, .K = 160, .V = 16});
  device_case<delta, float> d{c};
  auto a = d.args(c.args());
  const std::string m = message_of([&] { linea::chunkwise<delta, read::identity, backend::cuda>(a); });
  CHECK(m.find("K, V <= 128") != std::string::npos);
}

TEST_CASE("cuda: additive rule with the normaliser, recurrent and chunkwise") {
  auto c = random_case<additive, float>::make({.B = 2, .T = 100, .H = 2, .HV = 2, .K = 32, .V = 32, .seed = 3});
  auto ref = c.cast<double>();
  auto ra = ref.args();
  ra.normalize = true;
  reference::recurrent<additive>(ra);
  for (int form = 0; form < 2; ++form) {
    device_case<additive, float> d{c};
    auto a = d.args(c.args());
    a.normalize = true;
    if (form == 0) linea::recurrent<additive, read::identity, backend::cuda>(a);
    else linea::chunkwise<additive, read::identity, backend::cuda>(a);
    d.back();
    INFO("form " << form << " error " << relative_error(c.o, ref.o));
    CHECK(relative_error(c.o, ref.o) <= tolerance_for<float>());
  }
}
