// cu_seqlens as int32 or int64 (core/seqlens.hpp): both widths give identical results in every form, and a bad int32
// cu_seqlens is rejected with the same messages as an int64 one.
#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include <linea/forms/chunkwise.hpp>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/rejection.hpp"

using namespace linea;
using namespace linea::testing;

TEST_CASE("cu_seqlens: int32 offsets give the same result as int64 in every form") {
  const case_shape s{.T = 0, .H = 1, .HV = 2, .K = 16, .V = 8, .seqlens = {20, 0, 45, 1}, .initial_state = true};
  const auto c = random_case<gla, float>::make(s);
  const std::vector<std::int32_t> cu32(c.cu_seqlens.begin(), c.cu_seqlens.end());
  auto run = [&](auto form, bool narrow) {
    auto x = c;
    auto a = x.args();
    if (narrow) a.cu_seqlens = cu32;
    CHECK(a.cu_seqlens.is_int32() == narrow);
    form(a);
    return x;
  };
  auto rec = [](const auto& a) { recurrent<gla>(a); };
  auto chk = [](auto a) {
    a.chunk_size = 16;
    chunkwise<gla>(a);
  };
  auto ref = [](const auto& a) { recurrent<gla, read::identity, backend::reference>(a); };
  const auto r64 = run(rec, false), r32 = run(rec, true);
  CHECK(relative_error(r32.o, r64.o) == 0.0);
  CHECK(relative_error(r32.ht, r64.ht) == 0.0);
  const auto c64 = run(chk, false), c32 = run(chk, true);
  CHECK(relative_error(c32.o, c64.o) == 0.0);
  CHECK(relative_error(c32.ht, c64.ht) == 0.0);
  const auto f64 = run(ref, false), f32 = run(ref, true);
  CHECK(relative_error(f32.o, f64.o) == 0.0);
  CHECK(relative_error(f32.ht, f64.ht) == 0.0);
}

TEST_CASE("cu_seqlens: the accessors read either width as int64") {
  const std::vector<std::int32_t> cu32{0, 5, 9};
  const std::vector<std::int64_t> cu64{0, 5, 9};
  const cu_seqlens_span a = cu32, b = cu64, none;
  CHECK(a.size() == 3);
  CHECK(a[1] == 5);
  CHECK(a.back() == 9);
  CHECK(a.is_int32());
  CHECK(a.as_int64().empty());
  CHECK(a.as_int32().data() == cu32.data());
  CHECK(a.to_int64() == cu64);
  CHECK(!b.is_int32());
  CHECK(b.as_int64().data() == cu64.data());
  CHECK(b.to_int64() == cu64);
  CHECK(none.empty());
  CHECK(none.bytes().empty());
}

TEST_CASE("cu_seqlens: a bad int32 cu_seqlens is rejected naming it") {
  auto c = sentinel_case<gated_delta>({.B = 1, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8});
  auto a = c.args();
  const std::vector<std::int32_t> decreasing{0, 6, 4, 10}, short_of_T{0, 9};
  a.cu_seqlens = decreasing;
  expect_rejected(c, a, [&] { recurrent<gated_delta>(a); }, {"'cu_seqlens'", "decrease", "cu_seqlens[2] = 4"});
  a.cu_seqlens = short_of_T;
  expect_rejected(c, a, [&] { chunkwise<gated_delta>(a); }, {"'cu_seqlens'", "T = 10", "9"});
}
