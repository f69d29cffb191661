// Views built over a std::span or a container (core/view.hpp): extents and strides are checked against the buffer's
// size, and a view that would reach outside it is a linea::error naming the view, its extents, strides and the size.
#include <array>
#include <span>
#include <vector>

#include <doctest/doctest.h>

#include <linea/core/view.hpp>

#include "support/rejection.hpp"

using namespace linea;
using namespace linea::testing;

TEST_CASE("span views: a buffer large enough gives the same view as the pointer overloads") {
  std::vector<float> buf(2 * 3 * 4 * 5);
  const auto v = contiguous<4>(std::span(buf), {2, 3, 4, 5}, "q");
  const auto p = contiguous<4>(buf.data(), {2, 3, 4, 5});
  CHECK(v.ptr == p.ptr);
  for (int r = 0; r < 4; ++r) CHECK((v.ext[r] == p.ext[r] && v.str[r] == p.str[r]));
  // A container directly; const containers give views of const elements.
  const std::vector<float>& cbuf = buf;
  view<const float, 4> cv = contiguous<4>(cbuf, {2, 3, 4, 5}, "k");
  CHECK(cv.ptr == buf.data());
  // Head-first strides over the same buffer, a stride-0 broadcast over a short one, and an empty view.
  CHECK(strided<4>(buf, {2, 4, 3, 5}, {60, 5, 20, 1}, "q").ptr == buf.data());
  std::array<float, 4> gamma{};
  CHECK(strided<3>(gamma, {8, 100, 4}, {0, 0, 1}, "g").ext[1] == 100);
  CHECK(contiguous<4>(std::span<float>(), {2, 0, 4, 5}, "o").size() == 0);
}

TEST_CASE("span views: a buffer too small, or a negative stride or extent, is an error naming the view") {
  std::vector<float> buf(2 * 3 * 4 * 5 - 1);
  expect_error([&] { (void)contiguous<4>(std::span(buf), {2, 3, 4, 5}, "q"); },
               {"'q'", "[2, 3, 4, 5]", "[60, 20, 5, 1]", "0 .. 119", "holds 119"});
  expect_error([&] { (void)strided<4>(buf, {2, 3, 4, 5}, {60, 20, 5, 2}, "v"); }, {"'v'", "holds 119"});
  expect_error([&] { (void)strided<2>(buf, {2, 3}, {-1, 1}, "k"); }, {"'k'", "reaches elements -1"});
  expect_error([&] { (void)contiguous<2>(buf, {-1, 3}, "o"); }, {"'o'", "negative extent"});
}
