// tests/backend/cuda/plan_test.cu — the CUDA backward's workspace plan (backward/plan.hpp), on the host only (no
// device call: it runs anywhere the test binary builds): every float32 slot carve() hands out starts slot_bytes (256)
// past the workspace's base, so 16-byte aligned under a 16-byte aligned base whatever the extents; the slots lie
// inside plan.bytes (what backward_workspace_size reports) and overlap neither each other nor the chunk tables; and
// the slots hold the element counts of work.hpp's layouts. The shapes are the ones whose odd tokens · HV left the
// slots 4-byte aligned when they were laid end to end (the st17 ring's float2 stores faulted: fuzz seed 20261220
// case 40, B = 3, T = 127, K = 16, V = 48; seed 20261207 case 1303, T = 2049, K = 1, V = 64), and a few more.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <linea/backend/cuda/backward/plan.hpp>
#include <linea/core/storage.hpp>

// (A namespace of its own: this unit joins the light group's single translation unit, tests/backend/cuda/CMakeLists.txt.)
namespace linea::testing::backward_plan_test {

using namespace linea::cuda_detail::bwd;

struct plan_shape {
  index_t B, T, H, HV, K, V;
  std::vector<std::int64_t> cu_seqlens = {};
};

template <class In>
arguments<In, float> extents_only(const plan_shape& s) {
  arguments<In, float> a;
  a.q = contiguous<4>(static_cast<const In*>(nullptr), {s.B, s.T, s.H, s.K});
  a.k = a.q;
  a.v = contiguous<4>(static_cast<const In*>(nullptr), {s.B, s.T, s.HV, s.V});
  if (!s.cu_seqlens.empty()) a.cu_seqlens = s.cu_seqlens;
  return a;
}

// work.hpp's layouts in floats, written out (not float_slots' list): what the slots must add up to.
std::size_t layout_floats(const backward_plan& p, bool in16) {
  const std::size_t tokens = std::size_t(p.tokens), H = std::size_t(p.H), HV = std::size_t(p.HV),
                    K = std::size_t(p.K), V = std::size_t(p.V), pc = p.per_chunk();
  std::size_t n = tokens * (2 * H * K + 2 * HV * V + 3 * HV + 2 * HV * K + 2 * HV) +
                  pc * (CL + 2 * CL * CL + CL * K + 3 * CL * V + 2 * K * V);
  if (p.per_key) n += tokens * 2 * HV * K + pc * (2 * CL * K + K);
  if ((!p.per_key || per_key_inter) && in16) n += pc * (CL * K + CL * CL + (p.erases ? CL * V + CL * CL : 0));
  return n;
}

// Carves the plan over host memory at base (16-byte aligned, not 32: the weakest base backward.hpp accepts) and
// checks every slot.
template <class In>
void check_plan(const plan_shape& s, bool per_key, bool erases) {
  const auto a = extents_only<In>(s);
  const backward_plan p = plan_backward(a, per_key, erases);
  INFO("B " << s.B << " T " << s.T << " H " << s.H << " HV " << s.HV << " K " << s.K << " V " << s.V
            << " packed " << s.cu_seqlens.size() << " per_key " << per_key << " erases " << erases << " 16-bit "
            << (sizeof(In) == 2));
  REQUIRE(p.bytes > 0);
  CHECK(p.inter == ((!per_key || cuda_detail::bwd::per_key_inter) && sizeof(In) == 2));  // (work.hpp)
  for (const std::size_t at : {p.chunk_at, p.seq_at, p.float_at, p.key_at, p.inter_at}) CHECK(at % slot_bytes == 0);
  CHECK(p.seq_at >= p.chunk_at + p.chunks.size() * sizeof(chunk_info));
  CHECK(p.float_at >= p.seq_at + p.seqs.size() * sizeof(seq_chunks));

  std::vector<unsigned char> buffer(p.bytes + 64);
  unsigned char* base = buffer.data() + (32 - reinterpret_cast<std::uintptr_t>(buffer.data()) % 32) % 32 + 16;
  REQUIRE(reinterpret_cast<std::uintptr_t>(base) % 16 == 0);
  REQUIRE(reinterpret_cast<std::uintptr_t>(base) % 32 == 16);
  work w;
  carve(w, p, base);

  // every slot: where carve put it, its floats
  std::vector<std::pair<std::size_t, std::size_t>> slots;  // (byte offset from base, floats)
  std::size_t floats = 0;
  float_slots(p, [&](part, float* work::*slot, std::size_t n) {
    const float* x = w.*slot;
    REQUIRE(x != nullptr);
    const std::size_t at = std::size_t(reinterpret_cast<const unsigned char*>(x) - base);
    CHECK(at % slot_bytes == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(x) % 16 == 0);
    CHECK(at >= p.float_at);
    CHECK(at + n * sizeof(float) <= p.bytes);
    slots.emplace_back(at, n);
    floats += n;
  });
  CHECK(floats == layout_floats(p, sizeof(In) == 2));
  std::sort(slots.begin(), slots.end());
  for (std::size_t i = 1; i < slots.size(); ++i) CHECK(slots[i - 1].first + slots[i - 1].second * sizeof(float) <= slots[i].first);
  // what the plan does not carve stays null (phases.hpp and the kernels test these)
  if (!per_key) CHECK((w.log_alpha_k == nullptr && w.Gk == nullptr && w.Kd == nullptr && w.gL == nullptr));
  CHECK(w.Qg == nullptr);  // never written nor read: no slot
  if (!p.inter) CHECK((w.dW_inter == nullptr && w.dP_inter == nullptr));
  if (!p.inter || !erases) CHECK((w.dBv_inter == nullptr && w.M_inter == nullptr));
  // the ring's state slabs (float2): every (chunk, head) slab of h and dh 8-byte aligned where V is even
  if (s.V % 2 == 0)
    for (std::size_t c = 0; c < p.per_chunk(); ++c)
      CHECK((reinterpret_cast<std::uintptr_t>(w.h + c * std::size_t(s.K * s.V)) |
             reinterpret_cast<std::uintptr_t>(w.dh + c * std::size_t(s.K * s.V))) % 8 == 0);
}

template <class In>
void check_plans(const plan_shape& s) {
  for (const bool per_key : {false, true})
    for (const bool erases : {false, true}) check_plan<In>(s, per_key, erases);
}

const std::vector<plan_shape> odd_shapes = {
    {.B = 3, .T = 127, .H = 1, .HV = 1, .K = 16, .V = 48},    // fuzz seed 20261220 case 40
    {.B = 1, .T = 2049, .H = 1, .HV = 1, .K = 1, .V = 64},    // fuzz seed 20261207 case 1303
    {.B = 1, .T = 2049, .H = 1, .HV = 3, .K = 128, .V = 128},  // GVA, odd tokens · HV, full tiles
    {.B = 1, .T = 205, .H = 1, .HV = 3, .K = 5, .V = 7, .cu_seqlens = {0, 70, 70, 75, 205}},  // packed, one empty
    {.B = 2, .T = 1, .H = 1, .HV = 1, .K = 3, .V = 3},         // a single odd token per row
};

TEST_CASE("CUDA backward plan: every workspace slot starts 256 bytes past the base (odd token counts)") {
  for (const auto& s : odd_shapes) {
    check_plans<float>(s);
    check_plans<bf16>(s);
  }
}

// The additive fast path's plans (slots::add16_io, add16_direct): only its slots are carved — bf16 states in h and
// dh, and through phases 0 and 5 the float32 q, k, v, dO, log α, dq, dk, d log α — each 256 bytes past the base,
// inside plan.bytes, disjoint; every other slot null (a kernel reading one would fault under memcheck, not read
// another tensor), no hand-over scratch; and the plan's bytes are those slots and the tables, nothing more.
TEST_CASE("CUDA backward plan: the additive fast path carves its own slots only") {
  for (const auto& s : odd_shapes)
    for (const slots use : {slots::add16_io, slots::add16_direct}) {
      const auto a = extents_only<bf16>(s);
      const backward_plan p = plan_backward(a, false, false, use);
      const backward_plan all = plan_backward(a, false, false);
      INFO("B " << s.B << " T " << s.T << " HV " << s.HV << " K " << s.K << " V " << s.V << " direct "
                << (use == slots::add16_direct));
      CHECK(!p.inter);
      CHECK(p.bytes < all.bytes);
      std::vector<unsigned char> buffer(p.bytes + 64);
      unsigned char* base = buffer.data() + (16 - reinterpret_cast<std::uintptr_t>(buffer.data()) % 16) % 16;
      work w;
      carve(w, p, base);
      const std::size_t tokens = std::size_t(p.tokens), HV = std::size_t(s.HV), K = std::size_t(s.K),
                        Vp = std::size_t((s.V + 1) / 2 * 2), states16 = (p.per_chunk() * K * Vp + 1) / 2;
      std::size_t expect = slot_align(p.chunks.size() * sizeof(chunk_info)) + slot_align(p.seqs.size() * sizeof(seq_chunks)) +
                           2 * slot_round(states16) * sizeof(float);
      const bool io = use == slots::add16_io;
      if (io)
        expect += sizeof(float) * (2 * slot_round(tokens * std::size_t(s.H) * K) + 2 * slot_round(tokens * HV * std::size_t(s.V)) +
                                   2 * slot_round(tokens * HV) + 2 * slot_round(tokens * HV * K));
      CHECK(p.bytes == expect);
      std::vector<std::pair<std::size_t, std::size_t>> carved;
      float_slots(p, [&](part, float* work::*slot, std::size_t n) {
        const float* x = w.*slot;
        REQUIRE(x != nullptr);
        const std::size_t at = std::size_t(reinterpret_cast<const unsigned char*>(x) - base);
        CHECK(at % slot_bytes == 0);
        CHECK(at + n * sizeof(float) <= p.bytes);
        carved.emplace_back(at, n);
      });
      CHECK(carved.size() == (io ? 10u : 2u));
      std::sort(carved.begin(), carved.end());
      for (std::size_t i = 1; i < carved.size(); ++i)
        CHECK(carved[i - 1].first + carved[i - 1].second * sizeof(float) <= carved[i].first);
      CHECK((w.h != nullptr && w.dh != nullptr));
      CHECK((io == (w.q && w.k && w.v && w.d_o && w.log_alpha && w.dq && w.dk && w.dlog_alpha)));
      CHECK((!io == (!w.q && !w.k && !w.v && !w.d_o && !w.log_alpha && !w.dq && !w.dk && !w.dlog_alpha)));
      CHECK((!w.erase && !w.write && !w.derase && !w.Gc && !w.P && !w.Tinv && !w.W && !w.U && !w.U_new && !w.dU));
      CHECK((!w.dW_inter && !w.dP_inter && !w.dBv_inter && !w.M_inter && !w.log_alpha_k && !w.Gk));
    }
}

TEST_CASE("CUDA backward plan: carve rejects a workspace base that is not 16-byte aligned") {
  const backward_plan p = plan_backward(extents_only<bf16>(odd_shapes[0]), false, true);
  std::vector<unsigned char> buffer(p.bytes + 64);
  unsigned char* base = buffer.data() + (16 - reinterpret_cast<std::uintptr_t>(buffer.data()) % 16) % 16;
  work w;
  CHECK_NOTHROW(carve(w, p, base));
  CHECK_THROWS_WITH_AS(carve(w, p, base + 4), doctest::Contains("16-byte aligned"), linea::error);
}

}  // namespace linea::testing::backward_plan_test
