// tests/backend/cuda/fuzz/cuda_fuzz_plan.hpp — one CUDA fuzz case: a rule, a read, a form (recurrent, chunkwise,
// decode step, backward), an input type, a shape at or around the documented boundaries and a set of options,
// drawn from a seed and a case index (the same pair always gives the same case).
//
// The shapes come from support/inputs.hpp's random_case (SPEC §5's input distributions), as the CUDA suite's; this
// file only chooses them. What the documentation allows (docs/usage.md, "The CUDA backend") decides `expect`: a
// case outside it must be rejected with a linea::error, every other case must match the float64 reference.
// One tensor is judged otherwise (cuda_fuzz_case.hpp, normalize_dq_vanishes): `normalize`'s dq where it is 0 in
// exact arithmetic (K = 1, or sequences of at most one token without h0) — by the same SPEC §6 bound, against the
// scale of its two cancelling terms rather than its own (≈ 0) norm. A tensor over its bound by what the case's own
// conditioning estimate explains (dA_log / ddt_bias: the token sum's κ × its terms' error; o, the final state and dq
// with 16-bit inputs: the chunkwise forms' 16-bit write residuals) is reported ILLCOND, not FAIL
// (cuda_fuzz_conditioning.hpp, cuda_fuzz_case.hpp's judge_conditioning; docs/usage.md, "Accuracy notes").
#pragma once
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "read/ccq_inputs.hpp"
#include "support/inputs.hpp"

namespace linea::cuda_fuzz {

using testing::case_shape;
using testing::ccq_options;
using testing::gate_range;

enum class form_kind { recurrent, chunkwise, step, backward };
enum class read_kind { identity, uniform, decayed };
enum class dtype { f32, bf16, f16 };

inline const char* name_of(form_kind f) {
  constexpr const char* n[] = {"recurrent", "chunkwise", "step", "backward"};
  return n[static_cast<int>(f)];
}
inline const char* name_of(read_kind r) {
  constexpr const char* n[] = {"identity", "ccq-uniform", "ccq-decayed"};
  return n[static_cast<int>(r)];
}
inline const char* name_of(dtype d) {
  constexpr const char* n[] = {"f32", "bf16", "f16"};
  return n[static_cast<int>(d)];
}

// The rules as linea's list names them (rules/list.hpp order), and which inputs each takes.
constexpr const char* rule_names[] = {"additive", "simple_gla", "gla", "delta", "gated_delta", "kda", "gdn2"};
constexpr bool rule_scalar_gate[] = {false, true, false, false, true, false, false};
constexpr bool rule_key_gate[] = {false, false, true, false, false, true, true};
constexpr bool rule_beta[] = {false, false, false, true, true, true, false};

struct plan {
  long seed = 0, index = 0;
  int rule = 0;
  read_kind read = read_kind::identity;
  form_kind form = form_kind::recurrent;
  dtype type = dtype::f32;
  case_shape shape;
  ccq_options ccq;
  bool ht = false, residual = false, l2 = false, normalize = false, g_gamma = false, neg_inf = false;
  bool gate = false, lower_bound = false, step_pool = false;
  // cuda::launch: cu_seqlens / state_indices on the device (int32 or int64 offsets), a stream of the case's own
  // with a caller workspace of exactly workspace_size bytes
  bool device_indices = false, seqlens32 = false, own_stream = false;
  beta_activation beta_act = beta_activation::none;
  double scale = 0;     // 0: the default K^-1/2
  index_t chunk = 64;   // validated by the CUDA chunkwise form, not used
  std::string expect;   // why the documentation says this case is rejected ("" = it must run)

  std::string describe() const {
    std::string d = std::string(rule_names[rule]) + " " + name_of(read) + " " + name_of(form) + " " + name_of(type) +
                    " " + testing::describe_shape(shape);
    if (ht) d += " ht";
    if (residual) d += " residual";
    if (l2) d += " l2";
    if (normalize) d += " normalize";
    if (g_gamma) d += " g_gamma";
    if (neg_inf) d += " -inf-gates";
    if (gate) d += lower_bound ? " gate(A_log,dt_bias,lower_bound)" : " gate(A_log,dt_bias)";
    if (beta_act == beta_activation::sigmoid) d += " beta_act=sigmoid";
    if (beta_act == beta_activation::two_sigmoid) d += " beta_act=2sigmoid";
    if (scale) d += " scale=" + std::to_string(scale);
    if (step_pool) d += " pool+indices";
    if (device_indices) d += seqlens32 ? " device-indices(int32)" : " device-indices";
    if (own_stream) d += " stream+workspace";
    if (ccq.initial_stats) d += " C0";
    if (ccq.explicit_log_decay) d += " c_t";
    if (form == form_kind::chunkwise) d += " chunk_size=" + std::to_string(chunk);
    if (!expect.empty()) d += " [expect rejection: " + expect + "]";
    return d;
  }
};

using rng_t = std::mt19937_64;

inline plan make_plan(long seed, long index) {
  rng_t rng(static_cast<std::uint64_t>(seed) * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(index) * 1000003ull);
  auto pick = [&](long lo, long hi) { return std::uniform_int_distribution<long>(lo, hi)(rng); };
  auto coin = [&](int percent) { return pick(0, 99) < percent; };
  auto one_of = [&](const std::vector<index_t>& xs) { return xs[static_cast<std::size_t>(pick(0, long(xs.size()) - 1))]; };

  plan p;
  p.seed = seed, p.index = index;
  p.rule = static_cast<int>(pick(0, 6));
  p.form = static_cast<form_kind>(pick(0, 99) < 28 ? 3 : pick(0, 2));
  const long r = pick(0, 99);
  p.read = r < 60 ? read_kind::identity : r < 80 ? read_kind::uniform : read_kind::decayed;
  p.type = static_cast<dtype>(pick(0, 2));
  // The instances linea compiles (backend/cuda/instances.hpp): CCQ forwards in float32 / bf16, the identity
  // backward in float32 / bf16, the CCQ backward in float32. Other combinations would compile their kernels in
  // this unit (minutes); they are left to the CUDA suite (backward_test.cu runs fp16 backwards).
  if (p.read != read_kind::identity && p.type == dtype::f16) p.type = dtype::bf16;
  if (p.form == form_kind::backward && p.type == dtype::f16) p.type = dtype::bf16;
  if (p.form == form_kind::backward && p.read != read_kind::identity) p.type = dtype::f32;

  const bool chunked = p.form == form_kind::chunkwise || p.form == form_kind::backward;
  case_shape& s = p.shape;
  s.seed = static_cast<std::uint32_t>(pick(1, 1 << 30));
  s.B = one_of({1, 1, 2, 3, 5});
  s.H = one_of({1, 1, 2});
  s.HV = s.H * one_of({1, 1, 2, 4});  // GVA: HV = G·H
  // K and V at and around the documented limits (chunkwise and backward: K, V <= 128; recurrent and step:
  // K <= 256, V any), and now and then one beyond.
  const std::vector<index_t> dims = {16, 32, 48, 64, 96, 100, 128, 8, 1, 7, 63, 65, 127};
  s.K = one_of(dims), s.V = one_of(dims);
  if (coin(12)) {
    if (chunked) (coin(50) ? s.K : s.V) = one_of({129, 192, 256});
    else if (coin(50)) s.K = one_of({129, 192, 256, 257});
    else s.V = one_of({192, 256, 300});
  }
  if (p.form == form_kind::step) {
    s.T = 1;
    s.B = one_of({1, 3, 5, 8});
  } else {
    s.T = one_of({1, 63, 64, 65, 127, 129, 1000, 2, 31, 200, 0});
    if (coin(8)) {  // long single sequences: the chunkwise form cuts them into pieces (segments.hpp)
      s.T = one_of({1500, 2049, 4100, 6000});
      s.B = 1, s.HV = s.H;
    }
  }
  if (p.form != form_kind::step && coin(30)) {  // packed sequences, with empty and one-token ones
    const long n = pick(1, 5);
    for (long i = 0; i < n; ++i) s.seqlens.push_back(one_of({0, 1, 1, 2, 63, 64, 65, 100, 129, 300}));
  }
  if (!s.seqlens.empty()) {  // as random_case makes them: one packed row
    s.B = 1, s.T = 0;
    for (auto L : s.seqlens) s.T += L;
  }
  s.initial_state = coin(50);
  s.head_first = coin(20);
  s.gates = coin(25) ? gate_range::extreme : gate_range::normal;
  s.beta_max = coin(30) ? 2 : 1;
  // keep a case's float64 reference under ~0.1 s: B·T·HV·K·V (the backward costs ~3 forwards)
  auto work = [&] {
    return double(s.B * s.T) * double(s.HV) * double(s.K) * double(s.V);
  };
  while (work() > 3e7 && s.HV > s.H) s.HV /= 2;
  while (work() > 3e7 && s.B > 1) s.B = std::max<index_t>(1, s.B / 2);
  while (work() > 3e7 && s.T > 129 && s.seqlens.empty()) s.T /= 2;

  p.ht = coin(70);
  p.residual = coin(40);
  // (At K = 1 the L2 norm's Jacobian is ~1e-6 and dq, dk are a millionth of the terms phase 5 once subtracted: there
  // the choice comes from the shape's seed rather than a coin, so that every case drawn before K = 1 was allowed
  // keeps its draws.)
  p.l2 = s.K > 1 ? coin(25) : s.seed % 4 == 0;
  p.scale = coin(25) ? std::uniform_real_distribution<double>(0.1, 2.0)(rng) : 0;
  p.chunk = index_t(16) << pick(0, 3);
  const bool decays = rule_scalar_gate[p.rule] || rule_key_gate[p.rule];
  p.neg_inf = decays && p.form != form_kind::backward && coin(15);
  p.g_gamma = rule_scalar_gate[p.rule] && s.T > 0 && coin(15);  // (T = 0: a view of no elements over host memory)
  p.gate = decays && !p.neg_inf && coin(15);
  p.lower_bound = p.gate && coin(40);
  if (rule_beta[p.rule] && coin(15)) p.beta_act = coin(50) ? beta_activation::sigmoid : beta_activation::two_sigmoid;
  p.normalize = p.rule == 0 && coin(30);
  p.step_pool = p.form == form_kind::step && p.read == read_kind::identity && coin(50);
  p.device_indices = ((p.form == form_kind::recurrent || p.form == form_kind::chunkwise) && !s.seqlens.empty()) ||
                     p.step_pool ? coin(50) : false;
  p.seqlens32 = p.device_indices && coin(50);
  p.own_stream = p.form != form_kind::backward && coin(30);
  if (p.read != read_kind::identity) {
    p.ccq.initial_stats = coin(50);
    p.ccq.explicit_log_decay = p.read == read_kind::decayed && coin(40);
    p.ccq.seed = static_cast<std::uint32_t>(pick(1, 1 << 30));
  }

  // ---- what the documentation rejects ----
  if (p.form == form_kind::chunkwise && (s.K > 128 || s.V > 128)) p.expect = "chunkwise K, V <= 128";
  if ((p.form == form_kind::recurrent || p.form == form_kind::step) && s.K > 256) p.expect = "recurrent/step K <= 256";
  if (p.form == form_kind::backward) {
    if (s.K > 128 || s.V > 128) p.expect = "backward K, V <= 128";  // (g_gamma's stride-0 dg is summed)
  }
  if (p.read != read_kind::identity && p.normalize) p.expect = "CCQ with normalize unsupported";
  if (p.form == form_kind::step && p.normalize) p.expect = "decode step: normalize unsupported";
  return p;
}

}  // namespace linea::cuda_fuzz
