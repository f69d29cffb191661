// gd18's trimmed CUDA backward suite (st17's, bench/cuda/results/h200-2026-12-04-st17-scripts/, plus three cases):
// tests/backend/cuda/backward_test.cu's helpers verbatim and its test cases that reach the 16-bit backward of delta
// and gated_delta (other rules dropped from them), so that it links against the delta and gated_delta instance units
// and backward_phases alone.
// tests/backend/cuda/backward_test.cu — linea::backward<Rule, identity, backend::cuda> against the float64 reference
// backward (SPEC §6 tolerances for the input type): every rule the CUDA backward has, fixed-length batches with
// T not a multiple of the 64-token chunk, packed sequences (one empty), GVA, scale, initial state, and the
// in-kernel options (L2 norm, gates with A_log / dt_bias / lower bound, β activation); and the CCQ read
// (uniform and decayed weighting, c_t given or the rule's, initial statistics — z_0 < 0 and z_t = 0 too —, packed
// sequences, GVA, L2 norm);
// the additive rule's `normalize`.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cuda/consistency.hpp"
#include "forms/backward_case.hpp"

#include <linea/backend/cuda/mirror.hpp>

namespace linea::testing {
namespace {

struct bwd_options {
  bool qk_l2norm = false, gate = false, lower_bound = false;
  beta_activation beta_act = beta_activation::none;
  double scale = 0;  // 0: the default 1/sqrt(K)
  bool own_stream = false;  // through cuda::launch: a stream of its own and a caller workspace of the queried size
  double gk_scale = 0;      // when set: every per-key log decay multiplied by it (gates between the two ranges)
};

// Each gradient's error against the reference: checked, and printed when LINEA_BACKWARD_ERRORS is set (for the
// tables in bench/cuda/README.md).
template <class X, int R, class Y>
void expect_gradient(const std::string& label, const char* what, const tensor<X, R>& x, const tensor<Y, R>& ref, double tol) {
  if (std::getenv("LINEA_BACKWARD_ERRORS")) std::printf("%s %s %.3e\n", label.c_str(), what, relative_error(x, ref));
  expect_close(what, x, ref, tol);
}

template <class X, int R>
tensor<X, R> like(const std::array<index_t, R>& e) {
  return tensor<X, R>(e);
}

template <class Rule, class T>
void check_backward(const case_shape& shape, const bwd_options& opt = {}) {
  auto c = random_case<Rule, T>::make(shape);
  std::mt19937 rng(shape.seed + 99);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.5, 2.0);
  const index_t HV = c.shape.HV;
  if (opt.qk_l2norm) {
    for (auto& x : c.q.values()) x = T(double(x) * unit(rng));
    for (auto& x : c.k.values()) x = T(double(x) * unit(rng));
  }
  std::vector<float> A_log, dt_bias;
  const bool per_key = allocated(c.gk);
  const index_t NB = per_key ? HV * c.shape.K : HV;  // dt_bias: [HV] or [HV·K]
  if (opt.gate) {
    for (auto& x : c.g.values()) x = T(normal(rng));
    for (auto& x : c.gk.values()) x = T(normal(rng));
    for (index_t hv = 0; hv < HV; ++hv) A_log.push_back(float(0.5 * normal(rng)));
    for (index_t i = 0; i < NB; ++i) dt_bias.push_back(float(0.5 * normal(rng)));
  }
  if (opt.beta_act != beta_activation::none)
    for (auto& x : c.beta.values()) x = T(normal(rng));
  if (opt.gk_scale)
    for (auto& x : c.gk.values()) x = T(double(x) * opt.gk_scale);
  auto ref = c.template cast<double>();

  // dL/do, dL/dS_T: the same values in T / float and in double.
  tensor<T, 4> d_o(c.o.extents());
  tensor<float, 4> dht(c.ht.extents());
  for (auto& x : d_o.values()) x = T(normal(rng));
  for (auto& x : dht.values()) x = float(normal(rng));
  tensor<double, 4> d_o64(d_o.extents()), dht64(dht.extents());
  for (std::size_t i = 0; i < d_o.size(); ++i) d_o64.data()[i] = double(d_o.data()[i]);
  for (std::size_t i = 0; i < dht.size(); ++i) dht64.data()[i] = double(dht.data()[i]);

  const auto options = [&](auto& a, const float* A, const float* bias) {
    a.qk_l2norm = opt.qk_l2norm;
    a.beta_act = opt.beta_act;
    if (opt.scale) a.scale = opt.scale;
    if (opt.gate) {
      a.gate.A_log = contiguous<1>(A, {HV});
      a.gate.dt_bias = contiguous<1>(bias, {NB});
      if (opt.lower_bound) a.gate.lower_bound = -5.0f;
    }
  };

  // ---- reference ----
  const bool has_g = allocated(c.g), has_beta = allocated(c.beta);
  auto rdq = like<double, 4>(c.q.extents()), rdk = like<double, 4>(c.k.extents());
  auto rdv = like<double, 4>(c.v.extents()), rdh0 = like<double, 4>(c.ht.extents());
  tensor<double, 3> rdg, rdbeta;
  tensor<double, 4> rdgk;
  tensor<double, 1> rdA({HV}), rdbias({NB});
  gradients<double> gr{.d_o = d_o64, .d_final_state = dht64, .dq = rdq, .dk = rdk, .dv = rdv, .d_initial_state = rdh0};
  if (has_g) rdg = tensor<double, 3>(c.g.extents()), gr.dg = rdg;
  if (per_key) rdgk = tensor<double, 4>(c.gk.extents()), gr.dgk = rdgk;
  if (has_beta) rdbeta = tensor<double, 3>(c.beta.extents()), gr.dbeta = rdbeta;
  if (opt.gate) gr.dA_log = rdA, gr.ddt_bias = rdbias;
  {
    auto ra = ref.args();
    options(ra, A_log.data(), dt_bias.data());
    reference::backward<Rule>(ra, gr);
  }

  // ---- CUDA ----
  device_case<Rule, T> d{c};
  device_pool& pool = d.pool;
  tensor<float, 1> A_t({HV}), bias_t({NB});
  for (index_t i = 0; i < HV && opt.gate; ++i) A_t.data()[i] = A_log[i];
  for (index_t i = 0; i < NB && opt.gate; ++i) bias_t.data()[i] = dt_bias[i];
  const float* A_d = opt.gate ? pool.copy(A_t) : nullptr;
  const float* bias_d = opt.gate ? pool.copy(bias_t) : nullptr;
  auto a = d.args(c.args());
  options(a, A_d, bias_d);

  auto dq = like<T, 4>(c.q.extents()), dk = like<T, 4>(c.k.extents()), dv = like<T, 4>(c.v.extents());
  auto dh0 = like<float, 4>(c.ht.extents());
  tensor<T, 3> dg, dbeta;
  tensor<T, 4> dgk;
  tensor<float, 1> dA({HV}), dbias({NB});
  if (has_g) dg = tensor<T, 3>(c.g.extents());
  if (per_key) dgk = tensor<T, 4>(c.gk.extents());
  if (has_beta) dbeta = tensor<T, 3>(c.beta.extents());
  T *dq_d = pool.output(dq), *dk_d = pool.output(dk), *dv_d = pool.output(dv), *dg_d = pool.output(dg),
    *db_d = pool.output(dbeta), *dgk_d = pool.output(dgk);
  float *dh0_d = pool.output(dh0), *dA_d = pool.output(dA), *dbias_d = pool.output(dbias);
  gradients<T> g{.d_o = contiguous<4>(static_cast<const T*>(pool.copy(d_o)), d_o.extents()),
                 .d_final_state = contiguous<4>(static_cast<const float*>(pool.copy(dht)), dht.extents()),
                 .dq = contiguous<4>(dq_d, dq.extents()),
                 .dk = contiguous<4>(dk_d, dk.extents()),
                 .dv = contiguous<4>(dv_d, dv.extents()),
                 .d_initial_state = contiguous<4>(dh0_d, dh0.extents())};
  if (has_g) g.dg = contiguous<3>(dg_d, dg.extents());
  if (has_beta) g.dbeta = contiguous<3>(db_d, dbeta.extents());
  if (per_key) g.dgk = contiguous<4>(dgk_d, dgk.extents());
  if (opt.gate) g.dA_log = contiguous<1>(dA_d, {HV}), g.ddt_bias = contiguous<1>(dbias_d, {NB});
  if (opt.own_stream) {
    cudaStream_t stream = nullptr;
    cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const std::size_t bytes = cuda::backward_workspace_size<Rule>(a);
    REQUIRE(bytes > 0);
    void* ws = nullptr;
    cuda_ok(cudaMalloc(&ws, bytes));
    CHECK_THROWS_AS((linea::backward<Rule, read::identity, backend::cuda>(
                        a, g, cuda::launch{.stream = stream, .workspace = ws, .workspace_bytes = bytes - 1})),
                    linea::error);
    linea::backward<Rule, read::identity, backend::cuda>(a, g, {.stream = stream, .workspace = ws, .workspace_bytes = bytes});
    cuda_ok(cudaStreamSynchronize(stream));
    cuda_ok(cudaFree(ws));
    cuda_ok(cudaStreamDestroy(stream));
  } else {
    linea::backward<Rule, read::identity, backend::cuda>(a, g);
  }
  cuda_ok(cudaDeviceSynchronize());
  copy_back(dq, dq_d), copy_back(dk, dk_d), copy_back(dv, dv_d), copy_back(dh0, dh0_d);
  if (has_g) copy_back(dg, dg_d);
  if (per_key) copy_back(dgk, dgk_d);
  if (has_beta) copy_back(dbeta, db_d);
  if (opt.gate) copy_back(dA, dA_d), copy_back(dbias, dbias_d);

  const double tol = gradient_tolerance_for<T>();
  INFO(rule_name<Rule>::value << " " << type_name<T>() << " " << describe_shape(c.shape) << (opt.qk_l2norm ? " l2" : "")
                              << (opt.gate ? " gate" : "") << (opt.lower_bound ? " lower-bound" : ""));
  const std::string label = std::string(rule_name<Rule>::value) + " " + type_name<T>() + " [" +
                            describe_shape(c.shape) + (opt.qk_l2norm ? " l2" : "") + (opt.gate ? " gate" : "") +
                            (opt.lower_bound ? " lower-bound" : "") + "]";
  expect_gradient(label, "dq", dq, rdq, tol);
  expect_gradient(label, "dk", dk, rdk, tol);
  expect_gradient(label, "dv", dv, rdv, tol);
  expect_gradient(label, "d_initial_state", dh0, rdh0, tol);
  if (has_g) expect_gradient(label, "dg", dg, rdg, tol);
  if (per_key) expect_gradient(label, "dgk", dgk, rdgk, tol);
  if (has_beta) expect_gradient(label, "dbeta", dbeta, rdbeta, tol);
  if (opt.gate) expect_gradient(label, "dA_log", dA, rdA, tol), expect_gradient(label, "ddt_bias", dbias, rdbias, tol);
}

template <class Rule, class T>
void shapes() {
  SUBCASE("batch, T = 100, h0") {
    check_backward<Rule, T>({.B = 2, .T = 100, .H = 2, .HV = 2, .K = 64, .V = 32, .initial_state = true, .seed = 1});
  }
  SUBCASE("T = 64, K = V = 128") { check_backward<Rule, T>({.B = 1, .T = 64, .H = 1, .HV = 1, .K = 128, .V = 128, .seed = 2}); }
  SUBCASE("T = 150, K = V = 128, h0 (full-width tiles, a tail chunk)") {
    check_backward<Rule, T>({.B = 1, .T = 150, .H = 1, .HV = 1, .K = 128, .V = 128, .initial_state = true, .seed = 9});
  }
  SUBCASE("packed sequences {70, 0, 5, 130}, GVA") {
    check_backward<Rule, T>({.H = 1, .HV = 2, .K = 32, .V = 48, .seqlens = {70, 0, 5, 130}, .seed = 3});
  }
  SUBCASE("T = 300, extreme gates, scale") {
    check_backward<Rule, T>({.B = 1, .T = 300, .H = 2, .HV = 4, .K = 32, .V = 32, .initial_state = true,
                             .gates = gate_range::extreme, .seed = 4},
                            {.scale = 0.3});
  }
}

// The CCQ read and GDN-2: a backward_case (every gradient buffer NaN-filled) mirrored on the device, compared per
// gradient tensor with the float64 reference backward (SPEC §6 for T).
template <class Rule, class Read, class T>
void check_case(const case_shape& shape, const backward_options& opt) {
  backward_case<Rule, Read, T> c(shape, opt);
  cuda::mirror<T, float> m(c.args());
  cuda::gradient_mirror<T, float> gm(c.grads());
  linea::backward<Rule, Read, backend::cuda>(m.device, gm.device);
  gm.copy_back();
  INFO(rule_name<Rule>::value << (Read::is_identity ? "" : " ccq") << " " << type_name<T>() << " "
                              << describe_shape(shape) << (opt.qk_l2norm ? " l2" : "")
                              << (opt.ccq.explicit_log_decay ? " c_t given" : "") << (opt.gate ? " gate" : "")
                              << (opt.normalize ? " normalize" : ""));
  c.check_against_reference();
  CHECK(c.compared >= (Read::is_identity ? 4 : 8));  // dq, dk, dv, dh0 (+ dλ, dC0, dm0, dz0) at least
}

template <class Rule, class Read, class T>
void check_ccq(const case_shape& shape, const backward_options& opt) {
  check_case<Rule, Read, T>(shape, opt);
}

template <class Rule, class Read, class T>
void ccq_shapes() {
  SUBCASE("batch, T = 100, h0, initial statistics, GVA") {
    check_ccq<Rule, Read, T>({.B = 2, .T = 100, .H = 1, .HV = 2, .K = 32, .V = 16, .initial_state = true, .seed = 11},
                             {.ccq = {.initial_stats = true}});
  }
  SUBCASE("packed sequences {70, 0, 5, 130}, GVA, L2 norm") {
    check_ccq<Rule, Read, T>({.H = 2, .HV = 4, .K = 32, .V = 48, .seqlens = {70, 0, 5, 130}, .seed = 12},
                             {.qk_l2norm = true, .ccq = {.initial_stats = true}});
  }
  SUBCASE("T = 64, K = V = 128") {
    check_ccq<Rule, Read, T>({.B = 1, .T = 64, .H = 1, .HV = 1, .K = 128, .V = 128, .seed = 13}, {});
  }
  if constexpr (Read::weighting::decays) {
    SUBCASE("c_t given, T = 150, extreme gates") {
      check_ccq<Rule, Read, T>({.B = 1, .T = 150, .H = 2, .HV = 2, .K = 32, .V = 32, .initial_state = true,
                                .gates = gate_range::extreme, .seed = 14},
                               {.ccq = {.initial_stats = true, .explicit_log_decay = true}});
    }
  }
}

}  // namespace

TEST_CASE("CUDA backward, CCQ read: bf16 gated_delta") { ccq_shapes<gated_delta, read::ccq<read::decayed>, bf16>(); }

TEST_CASE_TEMPLATE("CUDA backward = float64 reference backward (bf16, fp16)", Rule, gated_delta) {
  SUBCASE("bf16") { shapes<Rule, bf16>(); }
  SUBCASE("fp16") { shapes<Rule, fp16>(); }
}

TEST_CASE_TEMPLATE("CUDA backward = float64 reference backward (bf16, the other rules)", Rule, delta) {
  shapes<Rule, bf16>();
}

TEST_CASE("CUDA backward: bf16 over 32 chunks, K = V = 128") {
  const case_shape s{.B = 1, .T = 2048, .H = 1, .HV = 2, .K = 128, .V = 128, .initial_state = true, .seed = 31};
  check_backward<gated_delta, bf16>(s);
}

TEST_CASE("CUDA backward: 16-bit state passes over 128 chunks, extreme gates, beta up to 2") {
  const case_shape gated{.B = 1, .T = 8192, .H = 1, .HV = 2, .K = 128, .V = 128, .initial_state = true,
                         .gates = gate_range::extreme, .beta_max = 2, .seed = 71};
  const case_shape plain{.B = 1, .T = 8192, .H = 1, .HV = 1, .K = 128, .V = 128, .initial_state = true,
                         .beta_max = 2, .seed = 72};
  check_backward<gated_delta, bf16>(gated);
  check_backward<delta, bf16>(plain);
}

// st17: the ring passes' second width (32 columns: 16-column tiles would not fit in one wave: 9 sequences × 2 heads ×
// 8 tiles = 144 CTAs > 132 SMs; 32 columns: 72), many chunks, partial last chunks, an initial state
TEST_CASE("CUDA backward: st17 ring passes at 32 columns (more heads than 16-column tiles fit in one wave)") {
  const case_shape s{.B = 9, .T = 1000, .H = 1, .HV = 2, .K = 128, .V = 128, .initial_state = true,
                     .gates = gate_range::extreme, .beta_max = 2, .seed = 171};
  check_backward<gated_delta, bf16>(s);
  check_backward<delta, bf16>(s);
}

// The workspace carves its float32 slots one after another: where tokens · HV is odd (the per-token slots) every
// slot after them is only 4-byte aligned. st17's ring passes stored the state with float2 and faulted there
// (cudaErrorMisalignedAddress; fuzz seed 20261220 case 40: B = 3, T = 127, K = 16, V = 48; seed 20261207 case 1303:
// T = 2049, K = 1, V = 64, extreme gates, β ≤ 2). Both shapes, both erasing rules, bf16.
TEST_CASE("CUDA backward: 16-bit state passes with an odd number of tokens (4-byte aligned workspace slots)") {
  const case_shape odd{.B = 3, .T = 127, .H = 1, .HV = 1, .K = 16, .V = 48, .initial_state = true, .seed = 172};
  const case_shape long1{.B = 1, .T = 2049, .H = 1, .HV = 1, .K = 1, .V = 64, .initial_state = true,
                         .gates = gate_range::extreme, .beta_max = 2, .seed = 173};
  check_backward<delta, bf16>(odd);
  check_backward<gated_delta, bf16>(odd);
  check_backward<delta, bf16>(long1);
  check_backward<gated_delta, bf16>(long1);
}

TEST_CASE("CUDA backward: 16-bit phase 1 under beta up to 2 and extreme gates, K and V not multiples of 16") {
  const case_shape wide{.B = 1, .T = 300, .H = 2, .HV = 4, .K = 128, .V = 128, .initial_state = true,
                        .gates = gate_range::extreme, .beta_max = 2, .seed = 61};
  const case_shape undecayed{.B = 2, .T = 200, .H = 1, .HV = 2, .K = 128, .V = 64, .initial_state = true,
                             .beta_max = 2, .seed = 62};
  const case_shape odd{.H = 1, .HV = 2, .K = 37, .V = 45, .seqlens = {70, 0, 5, 130}, .initial_state = true,
                       .gates = gate_range::extreme, .beta_max = 2, .seed = 63};
  SUBCASE("gated_delta bf16") {
    check_backward<gated_delta, bf16>(wide);
    check_backward<gated_delta, bf16>(undecayed);
    check_backward<gated_delta, bf16>(odd);
  }
  SUBCASE("gated_delta fp16") {
    check_backward<gated_delta, fp16>(wide);
    check_backward<gated_delta, fp16>(odd);
  }
  SUBCASE("delta bf16 (no decay)") {
    check_backward<delta, bf16>(undecayed);
    check_backward<delta, bf16>(odd);
  }
}
TEST_CASE("CUDA backward: nearly singular chunk transitions at small K (kone16), delta and gated_delta") {
  std::vector<case_shape> shapes;
  std::uint32_t seed = 1600;
  for (const index_t K : {1, 2, 4})
    for (const double beta_max : {1.0, 2.0})
      shapes.push_back({.B = 1, .T = 200, .H = 1, .HV = 2, .K = K, .V = 64, .initial_state = true,
                        .beta_max = beta_max, .seed = ++seed});
  for (const double beta_max : {1.0, 2.0})
    shapes.push_back({.H = 1, .HV = 2, .K = 1, .V = 96, .seqlens = {65, 0, 130, 7}, .initial_state = true,
                      .beta_max = beta_max, .seed = ++seed});
  for (const case_shape& s : shapes) {
    check_backward<delta, bf16>(s);
    check_backward<delta, float>(s);
    check_backward<gated_delta, bf16>(s);
    check_backward<gated_delta, float>(s);
  }
}

TEST_CASE("CUDA backward, 16-bit inputs: phase 4's inter-chunk kernel at odd shapes") {
  const case_shape odd{.H = 2, .HV = 4, .K = 37, .V = 45, .seqlens = {70, 0, 5, 130}, .seed = 61};
  const case_shape wide{.B = 2, .T = 90, .H = 1, .HV = 2, .K = 100, .V = 72, .initial_state = true,
                        .gates = gate_range::extreme, .seed = 62};
  SUBCASE("gated_delta") {
    check_backward<gated_delta, bf16>(odd);
    check_backward<gated_delta, fp16>(odd);
    check_backward<gated_delta, bf16>(wide);
  }
  SUBCASE("delta") {
    check_backward<delta, bf16>(odd);
    check_backward<delta, bf16>(wide);
  }
}

TEST_CASE("CUDA backward: one CTA per (sequence, head) in the state passes") {
  const case_shape part{.B = 13, .T = 130, .H = 4, .HV = 8, .K = 64, .V = 96, .initial_state = true, .seed = 33};
  check_backward<gated_delta, bf16>(part);
}

TEST_CASE("CUDA backward: cuda::launch with a stream and a caller workspace") {
  check_backward<gated_delta, bf16>({.B = 2, .T = 130, .H = 2, .HV = 2, .K = 64, .V = 48, .seed = 9}, {.own_stream = true});
}

TEST_CASE("CUDA backward: in-kernel options (L2 norm, gates, beta activation)") {
  const case_shape s{.B = 2, .T = 90, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true, .seed = 5};
  check_backward<delta, bf16>(s, {.qk_l2norm = true, .beta_act = beta_activation::two_sigmoid});
  check_backward<gated_delta, bf16>(s, {.qk_l2norm = true, .gate = true, .beta_act = beta_activation::sigmoid});
  check_backward<gated_delta, bf16>(s, {.gate = true, .lower_bound = true});
}

TEST_CASE("CUDA backward, 16-bit inputs: T = 1 and 2, extreme gates (gated_delta)") {
  for (const index_t T : {1, 2}) {
    CAPTURE(T);
    const case_shape s{.B = 1, .T = T, .H = 2, .HV = 2, .K = 63, .V = 48, .initial_state = true,
                       .gates = gate_range::extreme, .seed = std::uint32_t(60 + T)};
    check_backward<gated_delta, bf16>(s);
  }
}

// gd18: chunk_grad16's float2 pairs and float4 state reads at full-width chunks of 16 heads, and its fallbacks
// where the workspace slots are 4-byte aligned (odd tokens · HV) or K is odd
TEST_CASE("CUDA backward: gd18 chunk_grad16 at K = V = 128, odd tokens, odd K") {
  check_backward<gated_delta, bf16>({.B = 1, .T = 256, .H = 2, .HV = 4, .K = 128, .V = 128, .initial_state = true,
                                     .gates = gate_range::extreme, .beta_max = 2, .seed = 181});
  check_backward<delta, bf16>({.B = 1, .T = 257, .H = 1, .HV = 1, .K = 128, .V = 64, .initial_state = true, .seed = 182});
  check_backward<gated_delta, bf16>({.B = 3, .T = 127, .H = 1, .HV = 1, .K = 64, .V = 64, .initial_state = true,
                                     .seed = 183});
  check_backward<gated_delta, bf16>({.B = 2, .T = 100, .H = 1, .HV = 2, .K = 33, .V = 40, .initial_state = true,
                                     .seed = 184});
}

}  // namespace linea::testing
