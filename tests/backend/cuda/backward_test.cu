// tests/backend/cuda/backward_test.cu — linea::backward<Rule, identity, backend::cuda> against the float64 reference
// backward (SPEC §6 tolerances for the input type): every rule the CUDA backward has, fixed-length batches with
// T not a multiple of the 64-token chunk, packed sequences (one empty), GVA, scale, initial state, and the
// in-kernel options (L2 norm, gates with A_log / dt_bias / lower bound, β activation); and the CCQ read
// (uniform and decayed weighting, c_t given or the rule's, initial statistics — z_0 < 0 and z_t = 0 too —, packed
// sequences, GVA, L2 norm);
// the additive rule's `normalize`.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
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
  double off_channel = 0;   // when set: q's and k's channels past the first multiplied by it (nearly one channel)
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
  if (opt.off_channel)
    for (auto* x : {&c.q, &c.k})
      for (std::size_t i = 0; i < x->size(); ++i)
        if (i % std::size_t(c.shape.K) != 0) x->data()[i] = T(double(x->data()[i]) * opt.off_channel);
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
    // the exact size for these gradients, within the size for any gradients of these shapes
    const std::size_t bytes = cuda::backward_workspace_size<Rule>(a, g);
    REQUIRE(bytes > 0);
    CHECK(bytes <= cuda::backward_workspace_size<Rule>(a));
    void* ws = nullptr;
    cuda_ok(cudaMalloc(&ws, bytes));
    CHECK_THROWS_AS((linea::backward<Rule, read::identity, backend::cuda>(
                        a, g, cuda::launch{.stream = stream, .workspace = ws, .workspace_bytes = bytes - 1})),
                    linea::error);
    // a workspace that is large enough but not 16-byte aligned: an error naming the argument, before any launch
    CHECK_THROWS_WITH_AS((linea::backward<Rule, read::identity, backend::cuda>(
                             a, g, cuda::launch{.stream = stream, .workspace = static_cast<char*>(ws) + 4,
                                                .workspace_bytes = bytes})),
                         doctest::Contains("'workspace'"), linea::error);
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

// (Rule × read pairs chosen to cover each decay kind, erasing or not, and both weightings at a bounded compile time:
// the weighting only changes where c_t comes from, at run time.)
TEST_CASE_TEMPLATE("CUDA backward, CCQ read = float64 reference backward (float32)", Rule, additive, gated_delta, kda) {
  SUBCASE("decayed") { ccq_shapes<Rule, read::ccq<read::decayed>, float>(); }
  if constexpr (std::is_same_v<Rule, gated_delta>) {
    SUBCASE("uniform") { ccq_shapes<Rule, read::ccq<read::uniform>, float>(); }
  }
}

TEST_CASE("CUDA backward, CCQ read: bf16, fp16, in-kernel options") {
  SUBCASE("gated_delta bf16") { ccq_shapes<gated_delta, read::ccq<read::decayed>, bf16>(); }
  SUBCASE("kda fp16") { ccq_shapes<kda, read::ccq<read::decayed>, fp16>(); }
  // (the rule pass of a rule that only adds: state14's passes, or the ring with LINEA_BWD_STATE16_RING_ADDING)
  SUBCASE("simple_gla bf16") { ccq_shapes<simple_gla, read::ccq<read::decayed>, bf16>(); }
  SUBCASE("gla, gates, L2 norm") {
    check_ccq<gla, read::ccq<read::decayed>, float>(
        {.B = 2, .T = 90, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true, .seed = 15},
        {.qk_l2norm = true, .gate = true, .ccq = {.initial_stats = true}});
  }
  SUBCASE("gated_delta, gates, lower bound, beta activation") {
    check_ccq<gated_delta, read::ccq<read::decayed>, float>(
        {.B = 2, .T = 90, .H = 2, .HV = 4, .K = 32, .V = 16, .seed = 16},
        {.qk_l2norm = true, .gate = true, .lower_bound = true, .beta_act = beta_activation::sigmoid});
  }
  SUBCASE("gated_delta, caller workspace of the queried size") {
    using ccq = read::ccq<read::uniform>;
    backward_case<gated_delta, ccq, float> c({.H = 1, .HV = 2, .K = 32, .V = 48, .seqlens = {70, 0, 5, 130}, .seed = 17},
                                             {.ccq = {.initial_stats = true}});
    cuda::mirror<float, float> m(c.args());
    cuda::gradient_mirror<float, float> gm(c.grads());
    // (the size this call needs is the query with its gradients; the query without them also counts dg's float64
    // sums for a stride-0 dg, so it is an upper bound and one byte less still fits it)
    const std::size_t bytes = cuda::backward_workspace_size<gated_delta, ccq>(m.device, gm.device);
    REQUIRE(bytes > cuda::backward_workspace_size<gated_delta>(m.device, gm.device));
    CHECK(bytes <= cuda::backward_workspace_size<gated_delta, ccq>(m.device));
    void* ws = nullptr;
    cuda_ok(cudaMalloc(&ws, bytes));
    CHECK_THROWS_AS((linea::backward<gated_delta, ccq, backend::cuda>(
                        m.device, gm.device, cuda::launch{.workspace = ws, .workspace_bytes = bytes - 1})),
                    linea::error);
    linea::backward<gated_delta, ccq, backend::cuda>(m.device, gm.device,
                                                     cuda::launch{.workspace = ws, .workspace_bytes = bytes});
    gm.copy_back();
    cuda_ok(cudaFree(ws));
    c.check_against_reference();
  }
}

// Issue #14: the CCQ read's dλ and dc_t under lopsided weights (a_t ≈ e^-20, or two tokens): float32 statistics in
// the uncentred form C/z − μμᵀ lost most of their digits (fuzz seeds 20261206 / 20261204; dλ up to 1.7e-2). The
// fuzz's failing shapes, drawn by backward_case.
TEST_CASE("CUDA backward, CCQ read: dλ and dc under extreme gates (centred statistics)") {
  using decayed = read::ccq<read::decayed>;
  const auto extreme = gate_range::extreme;
  SUBCASE("kda, T = 2, c_t given, beta_max = 2") {
    check_ccq<kda, decayed, float>({.B = 1, .T = 2, .H = 1, .HV = 1, .K = 32, .V = 63, .beta_max = 2, .seed = 770},
                                   {.scale = 1.268194, .ccq = {.explicit_log_decay = true}});
  }
  SUBCASE("gla, B = 5, T = 129, GVA, L2 norm") {
    check_ccq<gla, decayed, float>({.B = 5, .T = 129, .H = 1, .HV = 4, .K = 32, .V = 63, .gates = extreme, .seed = 822},
                                   {.qk_l2norm = true, .scale = 1.464018});
  }
  SUBCASE("kda, T = 1500, h0") {
    check_ccq<kda, decayed, float>({.B = 1, .T = 1500, .H = 2, .HV = 2, .K = 32, .V = 65, .initial_state = true,
                                    .gates = extreme, .beta_max = 2, .seed = 1041},
                                   {});
  }
  SUBCASE("gdn2, T = 1000, K = V = 128, head-first, initial statistics") {
    check_ccq<gdn2, decayed, float>({.B = 1, .T = 1000, .H = 1, .HV = 1, .K = 128, .V = 128, .head_first = true,
                                     .gates = extreme, .seed = 2735},
                                    {.ccq = {.initial_stats = true}});
  }
  SUBCASE("gla, T = 1500, K = V = 96") {
    check_ccq<gla, decayed, float>({.B = 1, .T = 1500, .H = 1, .HV = 1, .K = 96, .V = 96, .gates = extreme, .seed = 4117},
                                   {.scale = 1.594837});
  }
  SUBCASE("kda, B = 5, T = 65, HV = 8, K = 100, V = 1, beta activation, initial statistics") {
    check_ccq<kda, decayed, float>({.B = 5, .T = 65, .H = 2, .HV = 8, .K = 100, .V = 1, .gates = extreme, .seed = 2717},
                                   {.beta_act = beta_activation::two_sigmoid, .ccq = {.initial_stats = true}});
  }
  SUBCASE("kda, T = 1, K = 63, initial statistics") {
    check_ccq<kda, decayed, float>({.B = 1, .T = 1, .H = 2, .HV = 2, .K = 63, .V = 48, .gates = extreme, .seed = 77},
                                   {.ccq = {.initial_stats = true}});
  }
  SUBCASE("gated_delta, T = 127, K = 128, gates (A_log, dt_bias), c_t given") {
    check_ccq<gated_delta, decayed, float>({.B = 1, .T = 127, .H = 1, .HV = 1, .K = 128, .V = 48, .beta_max = 2, .seed = 212},
                                           {.qk_l2norm = true, .gate = true, .ccq = {.explicit_log_decay = true}});
  }
}

// A caller's z_0 < 0 (ccq_read_kernels.hpp, inverse_key_weight): the centred statistics take μ_0 = m_0 / z_0 for any
// z_0 ≠ 0 (they read z_0 < 0 as z_0 = 0 before), and a z_t = 0 reads Σ_t = 0 with no adjoint, as the reference
// (read/ccq_statistics.hpp) — exact where z_t = 0 is a sequence's last token. Uniform weighting: z_t = z_0 + t.
TEST_CASE("CUDA backward, CCQ read: z_0 < 0 given (z_t = 0 at the end of a sequence) = float64 reference backward") {
  using uniform = read::ccq<read::uniform>;
  using decayed = read::ccq<read::decayed>;
  SUBCASE("z_0 = -1, T = 1: z_1 = 0") {
    check_ccq<gated_delta, uniform, float>({.B = 3, .T = 1, .H = 1, .HV = 2, .K = 32, .V = 16, .initial_state = true, .seed = 18},
                                           {.ccq = {.initial_stats = true, .z0 = -1.0}});
  }
  SUBCASE("z_0 = -2, packed {2, 1, 0, 2}: z = -1, 0 (ends), z_1 = -1 (a one-token sequence)") {
    check_ccq<gated_delta, uniform, float>({.H = 2, .HV = 4, .K = 32, .V = 16, .seqlens = {2, 1, 0, 2}, .seed = 19},
                                           {.qk_l2norm = true, .ccq = {.initial_stats = true, .z0 = -2.0}});
  }
  SUBCASE("z_0 = -0.5, T = 100: z_t > 0 after the first token, μ_0 = -2 m_0") {
    check_ccq<gated_delta, uniform, float>({.B = 2, .T = 100, .H = 1, .HV = 2, .K = 32, .V = 16, .initial_state = true, .seed = 20},
                                           {.ccq = {.initial_stats = true, .z0 = -0.5}});
    check_ccq<kda, decayed, float>({.B = 2, .T = 100, .H = 1, .HV = 2, .K = 32, .V = 16, .initial_state = true, .seed = 21},
                                   {.ccq = {.initial_stats = true, .z0 = -0.5}});
  }
}

// z_t = 0 with tokens after it (z_0 = -1: z_1 = 0, T = 100): the centred statistics have no finite μ_1, M_1 there and
// read them as (a_1 M_0, μ_0) (ccq_read_kernels.hpp) — not the reference's gradients, but every one finite.
TEST_CASE("CUDA backward, CCQ read: z_t = 0 inside a sequence gives finite gradients") {
  backward_case<gated_delta, read::ccq<read::uniform>, float> c(
      {.B = 2, .T = 100, .H = 1, .HV = 2, .K = 32, .V = 16, .initial_state = true, .seed = 22},
      {.ccq = {.initial_stats = true, .z0 = -1.0}});
  cuda::mirror<float, float> m(c.args());
  cuda::gradient_mirror<float, float> gm(c.grads());
  linea::backward<gated_delta, read::ccq<read::uniform>, backend::cuda>(m.device, gm.device);
  gm.copy_back();
  const auto& g = c.out();
  REQUIRE(g.dq.size() > 0);
  REQUIRE(g.dz0.size() > 0);
  CHECK(all_finite(g.dq));
  CHECK(all_finite(g.dk));
  CHECK(all_finite(g.dv));
  CHECK(all_finite(g.dg));
  CHECK(all_finite(g.dbeta));
  CHECK(all_finite(g.dh0));
  CHECK(all_finite(g.dlambda));
  CHECK(all_finite(g.dC0));
  CHECK(all_finite(g.dm0));
  CHECK(all_finite(g.dz0));
}

TEST_CASE("CUDA backward, gdn2 (channel gates b, w) = float64 reference backward") {
  SUBCASE("float32, batch, T = 100 (a partial chunk), h0, GVA") {
    check_case<gdn2, read::identity, float>(
        {.B = 2, .T = 100, .H = 1, .HV = 2, .K = 32, .V = 48, .initial_state = true, .seed = 21}, {});
  }
  SUBCASE("float32, packed sequences {70, 0, 5, 130}, L2 norm, gates") {
    check_case<gdn2, read::identity, float>({.H = 2, .HV = 2, .K = 32, .V = 32, .seqlens = {70, 0, 5, 130}, .seed = 22},
                                            {.qk_l2norm = true, .gate = true});
  }
  SUBCASE("float32, T = 64, K = V = 128, extreme gates") {
    check_case<gdn2, read::identity, float>(
        {.B = 1, .T = 64, .H = 1, .HV = 1, .K = 128, .V = 128, .initial_state = true, .gates = gate_range::extreme, .seed = 23},
        {});
  }
  SUBCASE("bf16, T = 150") {  // (fp16 differs only in the gradients' rounding: kda's CCQ case runs it)
    check_case<gdn2, read::identity, bf16>({.B = 1, .T = 150, .H = 2, .HV = 4, .K = 32, .V = 32, .initial_state = true, .seed = 24},
                                           {.qk_l2norm = true});
  }
  SUBCASE("CCQ read (decayed), packed, initial statistics") {
    check_case<gdn2, read::ccq<read::decayed>, float>({.H = 1, .HV = 2, .K = 32, .V = 32, .seqlens = {70, 0, 130}, .seed = 26},
                                                      {.ccq = {.initial_stats = true}});
  }
}

TEST_CASE_TEMPLATE("CUDA backward = float64 reference backward (float32)", Rule, additive, simple_gla, gla, delta, gated_delta,
                   kda) {
  shapes<Rule, float>();
}

TEST_CASE_TEMPLATE("CUDA backward = float64 reference backward (bf16, fp16)", Rule, simple_gla, gated_delta, kda) {
  SUBCASE("bf16") { shapes<Rule, bf16>(); }
  SUBCASE("fp16") { shapes<Rule, fp16>(); }
}

// 16-bit inputs' products run one TF32 mma per step (block_gemm.hpp's precision_for): the other rules' kernels at
// that precision, bf16 only (their bf16 backward is in linea's instance library; fp16 would compile every kernel of
// theirs again in this unit).
TEST_CASE_TEMPLATE("CUDA backward = float64 reference backward (bf16, the other rules)", Rule, additive, gla, delta) {
  shapes<Rule, bf16>();
}

// 16-bit inputs over many chunks: the state passes carry rounding from chunk to chunk (32 chunks here; the shapes
// above have at most 5), in the value-tile width of long sequences (16 columns).
TEST_CASE("CUDA backward: bf16 over 32 chunks, K = V = 128") {
  const case_shape s{.B = 1, .T = 2048, .H = 1, .HV = 2, .K = 128, .V = 128, .initial_state = true, .seed = 31};
  check_backward<gated_delta, bf16>(s);
  check_backward<kda, bf16>(s);
}

// state14: the state passes of 16-bit inputs with scalar decays run bf16 operands (state_passes16.hpp, hi + lo
// splits) with the state in fp32 registers: over 128 chunks (in 16-column tiles: few heads) under SPEC §6's extreme
// gates and β up to 2, and without decay (delta: nothing damps the carried rounding), with an initial state.
TEST_CASE("CUDA backward: 16-bit state passes over 128 chunks, extreme gates, beta up to 2") {
  const case_shape gated{.B = 1, .T = 8192, .H = 1, .HV = 2, .K = 128, .V = 128, .initial_state = true,
                         .gates = gate_range::extreme, .beta_max = 2, .seed = 71};
  const case_shape plain{.B = 1, .T = 8192, .H = 1, .HV = 1, .K = 128, .V = 128, .initial_state = true,
                         .beta_max = 2, .seed = 72};
  check_backward<gated_delta, bf16>(gated);
  check_backward<delta, bf16>(plain);
  check_backward<simple_gla, fp16>(gated);
}

// st17: the narrow state passes' two-stage form (state_passes16_ring.hpp) where its CTAs fit in one wave: 16 value
// columns for few heads (the cases above), 32 where 16-column tiles would not fit (9 sequences × 2 heads × 8 tiles =
// 144 CTAs > the H200's 132 SMs; 32 columns: 72), over 16 chunks with a partial last one, extreme gates, β up to 2.
TEST_CASE("CUDA backward: st17 ring passes at 32 columns (more heads than 16-column tiles fit in one wave)") {
  const case_shape s{.B = 9, .T = 1000, .H = 1, .HV = 2, .K = 128, .V = 128, .initial_state = true,
                     .gates = gate_range::extreme, .beta_max = 2, .seed = 171};
  check_backward<gated_delta, bf16>(s);
  check_backward<delta, bf16>(s);
}

// s13: per-key decays (kda, gdn2, gla) with 16-bit inputs at the shapes that pick each state-pass width: ≥ 99
// (sequence, head) pairs (104 here: 128 columns forward; reverse 64 on the 3xTF32 passes, 32 on the 16-bit ring — gla,
// which only adds, 128 single-stage), 18 pairs (16 columns on the 3xTF32 passes; the 32-column ring), 2 pairs over 64
// chunks (the 16-column ring); SPEC §6's
// extreme gates, β up to 2, h0, a partial last chunk. By default per-key decays run the 3xTF32 passes
// (staged_state_passes.hpp); built with LINEA_BWD_STATE16_PER_KEY=1 (and LINEA_BWD_STATE16_RING_ADDING=1 for gla's
// narrow tiles) the same case runs the 16-bit passes' PerKey form (phases.hpp: written in session 13, not yet run on
// the H200).
TEST_CASE("CUDA backward: per-key decays with 16-bit inputs at each state-pass tile width") {
  const case_shape many{.B = 13, .T = 130, .H = 4, .HV = 8, .K = 128, .V = 128, .initial_state = true,
                        .gates = gate_range::extreme, .beta_max = 2, .seed = 1301};
  const case_shape some{.B = 9, .T = 1000, .H = 1, .HV = 2, .K = 128, .V = 128, .initial_state = true,
                        .gates = gate_range::extreme, .beta_max = 2, .seed = 1302};
  const case_shape chain{.B = 1, .T = 4096, .H = 1, .HV = 2, .K = 128, .V = 128, .initial_state = true,
                         .gates = gate_range::extreme, .beta_max = 2, .seed = 1303};
  SUBCASE("kda") {
    check_backward<kda, bf16>(many);
    check_backward<kda, fp16>(some);
    check_backward<kda, bf16>(chain);
  }
  SUBCASE("gla") {
    check_backward<gla, bf16>(many);
    check_backward<gla, bf16>(some);
    check_backward<gla, bf16>(chain);
  }
  SUBCASE("gdn2") {
    check_case<gdn2, read::identity, bf16>(many, {});
    check_case<gdn2, read::identity, bf16>(some, {});
  }
}

// The workspace once carved its float32 slots one after another: where tokens · HV is odd (the per-token slots)
// every slot after them was only 4-byte aligned, and st17's ring passes, which store the state with float2, faulted
// there (cudaErrorMisalignedAddress; fuzz seed 20261220 case 40: B = 3, T = 127, K = 16, V = 48; seed 20261207 case
// 1303: T = 2049, K = 1, V = 64, extreme gates, β ≤ 2). Every slot now starts 256 bytes past the base (plan.hpp;
// plan_test.cu checks the offsets on the host). Both shapes, both erasing rules, bf16, in linea's cached workspace
// and in a caller's of backward_workspace_size bytes (own_stream; a misaligned one is rejected there).
TEST_CASE("CUDA backward: 16-bit state passes with an odd number of tokens (workspace slot alignment)") {
  const case_shape odd{.B = 3, .T = 127, .H = 1, .HV = 1, .K = 16, .V = 48, .initial_state = true, .seed = 172};
  const case_shape long1{.B = 1, .T = 2049, .H = 1, .HV = 1, .K = 1, .V = 64, .initial_state = true,
                         .gates = gate_range::extreme, .beta_max = 2, .seed = 173};
  for (const bool caller : {false, true}) {
    CAPTURE(caller);
    check_backward<delta, bf16>(odd, {.own_stream = caller});
    check_backward<gated_delta, bf16>(odd, {.own_stream = caller});
    check_backward<delta, bf16>(long1, {.own_stream = caller});
    check_backward<gated_delta, bf16>(long1, {.own_stream = caller});
  }
}

// Phase 1 of the scalar-decay rules for 16-bit inputs is chunk_prep16_kernel (bf16 operands on tensor cores; T =
// (I + A)⁻¹ in float32 from A's fp32 accumulators): under SPEC §6's extremes — β up to 2 (negative eigenvalues of
// the transition; I + A furthest from the identity where no decay damps A: delta) and log decays uniform in
// [−20, 0] — with full 128-wide tiles, and with K, V not multiples of 16 (the tiles' zero columns) over packed
// sequences (partial chunks, an empty sequence) and GVA.
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
  SUBCASE("simple_gla and additive bf16") {
    check_backward<simple_gla, bf16>(wide);
    check_backward<simple_gla, bf16>(odd);
    check_backward<additive, bf16>(odd);
  }
}

// kone16 (issue #14): the erasing rules at small K with unit keys, where a chunk's transition Π_t α_t (I − β_t k_t k_tᵀ)
// is nearly singular (K = 1: Π (1 − β_t) ~ 1e-20 over 64 tokens). The state passes form it as γ_L I − Kdᵀ W, a
// cancellation whose rounding times the rest of the sequence's adjoint reached dS_0 (and, through phase 1's bf16 W,
// dβ and dq): main 430ab74 gave d_initial_state up to 1.43 relative on the fuzz cases (bf16), 1.3–3.3e-4 (float32).
// β in [0, 1] and [0, 2], an initial state, a few chunks (the last partial), and packed sequences whose first chunk
// is partial or exactly one chunk and a token (fuzz case 2639's T = 65); every gradient at SPEC §6's bounds.
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

// The in-kernel L2 norm's adjoint where x is one channel (K = 1) or nearly (the other channels 1e-3 of the first):
// dq, dk are ~1e-6 of the terms of dx̂ − x̂ (x̂·dx̂), so phase 5 must use the form that does not cancel
// (input_adjoint_kernel.hpp's store_adjoint; before it, float32 and bf16 dq, dk were ~5 % off here). GVA: phase 5
// sums the group's value heads first. Every path through phase 5: the erasing rules, per-key decays, the additive
// fast path through phases 0/5.
TEST_CASE("CUDA backward: the in-kernel L2 norm's adjoint where q, k are one channel or nearly") {
  const case_shape one{.B = 2, .T = 100, .H = 1, .HV = 2, .K = 1, .V = 32, .initial_state = true, .seed = 1801};
  const case_shape near{.B = 1, .T = 130, .H = 1, .HV = 2, .K = 8, .V = 16, .seed = 1802};
  const bwd_options l2{.qk_l2norm = true}, l2_near{.qk_l2norm = true, .off_channel = 1e-3};
  SUBCASE("delta, gated_delta") {
    check_backward<delta, float>(one, l2), check_backward<delta, bf16>(one, l2);
    check_backward<gated_delta, float>(near, l2_near), check_backward<gated_delta, bf16>(one, l2);
  }
  SUBCASE("gla, kda") {
    check_backward<gla, float>(one, l2), check_backward<kda, bf16>(near, l2_near);
  }
  SUBCASE("additive, simple_gla") {
    check_backward<additive, bf16>(one, l2), check_backward<simple_gla, bf16>(near, l2_near);
    check_backward<simple_gla, float>(one, l2);
  }
}

// The same nearly singular transitions for the per-key delta rules (kda: per-key decay; gdn2: per-key decay and the
// channel gates b, w). kone16 recomputed dS_0 token by token over the first chunk for delta / gated_delta only; kda
// and gdn2 still take it from the chunk form (γ_L I − Kdᵀ W): this case holds them to SPEC §6 at K = 1, 2, 4, β up
// to 2, an initial state, and packed sequences whose first chunk is partial or one chunk and a token.
TEST_CASE("CUDA backward: nearly singular chunk transitions at small K, kda and gdn2") {
  std::vector<case_shape> shapes;
  std::uint32_t seed = 1700;
  for (const index_t K : {1, 2, 4})
    for (const double beta_max : {1.0, 2.0})
      shapes.push_back({.B = 1, .T = 200, .H = 1, .HV = 2, .K = K, .V = 64, .initial_state = true,
                        .beta_max = beta_max, .seed = ++seed});
  for (const double beta_max : {1.0, 2.0})
    shapes.push_back({.H = 1, .HV = 2, .K = 1, .V = 96, .seqlens = {65, 0, 130, 7}, .initial_state = true,
                      .beta_max = beta_max, .seed = ++seed});
  for (const case_shape& s : shapes) {
    CAPTURE(s.K);
    CAPTURE(s.beta_max);
    check_backward<kda, bf16>(s);
    check_backward<kda, float>(s);
    check_case<gdn2, read::identity, bf16>(s, {});
    check_case<gdn2, read::identity, float>(s, {});
  }
}

// grad13: 16-bit inputs' phase 4 of scalar decays runs in two kernels (backward/inter_grad_kernel.hpp forms the
// products over V in bf16 operands, chunk_grad_kernel the rest): K and V neither multiples of 16 nor of 4 (its
// element-wise loads, zero-padded tiles), K = 100 (two key tiles, the second partial), packed sequences with partial
// chunks and an empty one, GVA, extreme gates; and one- and two-token sequences under extreme gates, whose decay
// gradients hold little but the terms it forms.
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
  SUBCASE("simple_gla, additive") {
    check_backward<simple_gla, bf16>(odd);
    check_backward<simple_gla, fp16>(wide);
    check_backward<additive, bf16>(odd);
  }
  SUBCASE("T = 1 and 2, extreme gates") {
    for (const index_t T : {1, 2}) {
      CAPTURE(T);
      const case_shape s{.B = 1, .T = T, .H = 2, .HV = 2, .K = 63, .V = 48, .initial_state = true,
                         .gates = gate_range::extreme, .seed = std::uint32_t(60 + T)};
      check_backward<simple_gla, bf16>(s);
      check_backward<gated_delta, bf16>(s);
    }
  }
}

// Enough (sequence, value head) pairs that the staged state passes of scalar decays take one CTA per pair (128 value
// columns; at least 3/4 of the SMs busy: 104 pairs on the H200's 132 SMs) instead of 16-column tiles: full and
// partial value tiles (V = 96), K below the tile's 128, a tail chunk.
TEST_CASE("CUDA backward: one CTA per (sequence, head) in the state passes") {
  const case_shape full{.B = 13, .T = 130, .H = 4, .HV = 8, .K = 128, .V = 128, .initial_state = true, .seed = 32};
  const case_shape part{.B = 13, .T = 130, .H = 4, .HV = 8, .K = 64, .V = 96, .initial_state = true, .seed = 33};
  check_backward<gated_delta, float>(full);
  check_backward<simple_gla, float>(full);
  check_backward<gated_delta, float>(part);
  check_backward<gated_delta, bf16>(part);
}

// Issue #14: linear_attn and simple_gla with 16-bit inputs take the additive fast path (backward/add16_phases.hpp:
// bf16 states h, dH, one per-chunk kernel) — its three value-tile widths of the state passes (64 columns where
// 4 · pairs · ⌈V / 64⌉ ≥ ¾ of the SMs — 128 columns at ≥ 99 (sequence, head) pairs before add18 —; 32; 16), many chunks under SPEC's extreme gates with h0 (the carried bf16
// states' rounding), K and V not multiples of 16, V = 64, GVA, packed sequences, and the in-kernel options.
TEST_CASE("CUDA backward: the additive fast path (linear_attn, simple_gla, 16-bit inputs)") {
  SUBCASE("wide state tiles (64 columns), V = 96, K = 64, a tail chunk") {
    const case_shape s{.B = 13, .T = 130, .H = 4, .HV = 8, .K = 64, .V = 96, .initial_state = true, .seed = 81};
    check_backward<simple_gla, bf16>(s);
    check_backward<additive, bf16>(s);
  }
  SUBCASE("32-column state tiles, extreme gates, GVA") {
    const case_shape s{.B = 4, .T = 200, .H = 4, .HV = 8, .K = 128, .V = 128, .initial_state = true,
                       .gates = gate_range::extreme, .seed = 82};
    check_backward<simple_gla, bf16>(s);
  }
  SUBCASE("64 chunks, K = V = 128, extreme gates, h0") {
    const case_shape s{.B = 1, .T = 4096, .H = 1, .HV = 2, .K = 128, .V = 128, .initial_state = true,
                       .gates = gate_range::extreme, .seed = 83};
    check_backward<simple_gla, bf16>(s);
    check_backward<additive, bf16>(s);
  }
  SUBCASE("odd K, V; V = 64; packed sequences") {
    check_backward<additive, bf16>({.B = 2, .T = 77, .H = 2, .HV = 2, .K = 37, .V = 64, .initial_state = true, .seed = 84});
    check_backward<simple_gla, fp16>({.H = 1, .HV = 3, .K = 100, .V = 45, .seqlens = {64, 1, 0, 129}, .initial_state = true,
                                      .gates = gate_range::extreme, .seed = 85});
  }
  SUBCASE("in-kernel options: L2 norm, gates, lower bound") {
    const case_shape s{.B = 2, .T = 90, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true, .seed = 86};
    check_backward<simple_gla, bf16>(s, {.qk_l2norm = true, .gate = true, .lower_bound = true});
    check_backward<additive, bf16>(s, {.qk_l2norm = true, .scale = 0.7});
  }
}
// A small case of the fast path's three kernels for compute-sanitizer (memcheck, racecheck): 16- and 128-column
// state tiles, partial chunks.
TEST_CASE("CUDA backward: the additive fast path at small shapes (for the sanitizers)") {
  check_backward<simple_gla, bf16>({.B = 1, .T = 150, .H = 1, .HV = 2, .K = 48, .V = 40, .initial_state = true, .seed = 87});
  check_backward<additive, bf16>({.B = 40, .T = 70, .H = 1, .HV = 4, .K = 128, .V = 128, .seed = 88});
}

// io17 (issue #14): where nothing needs phases 0 and 5 (G = 1, no L2 norm, no in-kernel gate, no normalize) the fast
// path's kernels read the caller's q, k, v, dO, g and write its dq, dk, dg themselves (backward/add16_io.hpp). Each
// case runs that way and through phases 0 and 5 (add16_direct_enabled false), both against the float64 reference:
// K, V not multiples of 16 nor of 4 (element-wise loads and stores), the three state-tile widths, packed sequences
// with a 1-token and an empty one, T = 1, h0 and dL/dS_T, scale, a caller workspace; and the options that keep
// phases 0 and 5 at G = 1.
static void direct_and_through_phases(const std::function<void()>& run) {
  bool& direct = cuda_detail::bwd::add16_direct_enabled;
  const bool was = direct;
  for (const bool d : {true, false}) {
    CAPTURE(d);
    direct = d;
    run();
  }
  direct = was;
}
TEST_CASE("CUDA backward: the additive fast path reading and writing the caller's tensors (direct)") {
  SUBCASE("K = 37, V = 45, a tail chunk, h0") {
    direct_and_through_phases([] {
      const case_shape s{.B = 2, .T = 150, .H = 3, .HV = 3, .K = 37, .V = 45, .initial_state = true, .seed = 91};
      check_backward<simple_gla, bf16>(s);
      check_backward<additive, bf16>(s);
    });
  }
  SUBCASE("wide state tiles (64 columns), extreme gates, K = V = 128") {
    direct_and_through_phases([] {
      check_backward<simple_gla, bf16>({.B = 13, .T = 130, .H = 8, .HV = 8, .K = 128, .V = 128, .initial_state = true,
                                        .gates = gate_range::extreme, .seed = 92});
    });
  }
  SUBCASE("packed sequences {64, 1, 0, 129}, 32 chunks, extreme gates") {
    direct_and_through_phases([] {
      const case_shape p{.H = 2, .HV = 2, .K = 64, .V = 64, .seqlens = {64, 1, 0, 129}, .initial_state = true,
                         .gates = gate_range::extreme, .seed = 93};
      check_backward<simple_gla, fp16>(p);
      check_backward<additive, bf16>(p);
      check_backward<simple_gla, bf16>({.B = 1, .T = 2048, .H = 2, .HV = 2, .K = 128, .V = 128, .initial_state = true,
                                        .gates = gate_range::extreme, .seed = 94});
    });
  }
  SUBCASE("T = 1 and 2, extreme gates, scale, a caller workspace") {
    direct_and_through_phases([] {
      for (const index_t T : {1, 2}) {
        CAPTURE(T);
        check_backward<simple_gla, bf16>({.B = 1, .T = T, .H = 2, .HV = 2, .K = 63, .V = 48, .initial_state = true,
                                          .gates = gate_range::extreme, .seed = std::uint32_t(94 + T)});
      }
      check_backward<simple_gla, bf16>({.B = 2, .T = 130, .H = 2, .HV = 2, .K = 64, .V = 48, .seed = 97},
                                       {.scale = 0.3, .own_stream = true});
      check_backward<additive, bf16>({.B = 2, .T = 130, .H = 2, .HV = 2, .K = 64, .V = 48, .seed = 98},
                                     {.scale = 1.7, .own_stream = true});
    });
  }
  SUBCASE("G = 1 with an option that keeps phases 0 and 5: L2 norm, in-kernel gate") {
    const case_shape s{.B = 2, .T = 90, .H = 2, .HV = 2, .K = 32, .V = 16, .initial_state = true, .seed = 99};
    check_backward<simple_gla, bf16>(s, {.qk_l2norm = true});
    check_backward<simple_gla, bf16>(s, {.gate = true, .lower_bound = true});
    check_backward<additive, bf16>(s, {.qk_l2norm = true, .scale = 0.7});
  }
}
// The direct path's kernels at small shapes for compute-sanitizer (memcheck, racecheck): 16- and 128-column state
// tiles, partial chunks, K, V not multiples of 16.
TEST_CASE("CUDA backward: the additive fast path direct at small shapes (for the sanitizers)") {
  check_backward<simple_gla, bf16>({.B = 1, .T = 150, .H = 2, .HV = 2, .K = 48, .V = 40, .initial_state = true, .seed = 100});
  check_backward<additive, bf16>({.B = 50, .T = 70, .H = 2, .HV = 2, .K = 128, .V = 128, .seed = 101});
  check_backward<simple_gla, fp16>({.B = 1, .T = 70, .H = 1, .HV = 1, .K = 37, .V = 45, .initial_state = true, .seed = 102});
}

// add18 (issue #14): the fast path's state passes at each value-tile width on the same shapes (64 columns, two CTAs
// an SM, where (sequence, head) pairs fill the GPU; 32; 16), each direct and through phases 0/5: V = 96 and 72 (a
// partial last tile of 32 / 8 columns), K, V multiples of 8 but not 16 (the 16-byte copies' zero pieces), K, V
// not multiples of 8 (element-wise loads, pair stores); and an odd tokens · HV, where the workspace's h, dh slots are
// only 4-byte aligned (the state stores and loads then take pairs, not 16-byte rows).
TEST_CASE("CUDA backward: the additive fast path at each state-tile width, and 4-byte aligned state slots") {
  struct columns_guard {
    int& c = cuda_detail::bwd::add16_state_columns;
    ~columns_guard() { c = 0; }
  } columns;
  SUBCASE("64, 32 and 16 columns on the same shapes") {
    for (const int c : {64, 32, 16}) {
      CAPTURE(c);
      columns.c = c;
      direct_and_through_phases([] {
        check_backward<simple_gla, bf16>({.B = 2, .T = 200, .H = 2, .HV = 2, .K = 128, .V = 96, .initial_state = true,
                                          .gates = gate_range::extreme, .seed = 110});
        check_backward<additive, bf16>({.B = 2, .T = 150, .H = 3, .HV = 3, .K = 40, .V = 72, .initial_state = true, .seed = 111});
        check_backward<simple_gla, fp16>({.B = 1, .T = 130, .H = 2, .HV = 2, .K = 37, .V = 45, .initial_state = true,
                                          .seed = 112});
      });
    }
  }
  SUBCASE("odd tokens · HV: 4-byte aligned state slots") {
    direct_and_through_phases([] {
      check_backward<simple_gla, bf16>({.B = 1, .T = 127, .H = 3, .HV = 3, .K = 64, .V = 64, .initial_state = true,
                                        .gates = gate_range::extreme, .seed = 113});
      check_backward<additive, bf16>({.B = 3, .T = 127, .H = 1, .HV = 1, .K = 128, .V = 128, .seed = 114});
    });
  }
}

// seg19 (issue #14): the fast path's state passes over pieces of long sequences (backward/add16_pieces.hpp: an end
// pass, the combine, the full pass). Forced at small shapes by add16_piece_chunks — pieces of 1, 2 and 3 chunks (a
// piece of one chunk, unequal lengths, a tail chunk), packed sequences of which some fit one piece and one is empty,
// h0 and dL/dS_T, SPEC's extreme gates (Γ of a piece underflows to 0), each direct and through phases 0/5 — and the
// automatic choice on one long sequence; the host plan's cuts at the shapes of bench/cuda/README.md.
TEST_CASE("CUDA backward: the additive fast path over pieces of long sequences") {
  namespace b = cuda_detail::bwd;
  struct pieces_guard {
    int& c = cuda_detail::bwd::add16_piece_chunks;
    const int was = c;
    ~pieces_guard() { c = was; }
  } pieces;
  pieces.c = 0;  // (the automatic choice, whatever LINEA_BWD_ADD16_PIECES_OFF says)
  SUBCASE("the plan: where sequences are cut (132 SMs, HV = 16, V = 128)") {
    const auto seqs = [](std::vector<index_t> counts) {
      std::vector<b::seq_chunks> s;
      index_t first = 0;
      for (const index_t c : counts) s.push_back({first, c}), first += c;
      return s;
    };
    CHECK(b::add16_plan_pieces(seqs(std::vector<index_t>(8, 64)), 16, 128, 132).empty());  // 8×4096
    const auto one = b::add16_plan_pieces(seqs({512}), 16, 128, 132);                   // 1×32768: 8 × 64 chunks
    REQUIRE(one.size() == 8);
    for (int i = 0; i < 8; ++i) CHECK((one[i].first == 64 * i && one[i].count == 64 && one[i].index == i && one[i].of == 8));
    CHECK(b::add16_plan_pieces(seqs({256, 256}), 16, 128, 132).size() == 8);            // 2×16384: 4 pieces each
    std::vector<index_t> varlen(64, 8);                                                  // one 32768 and 63 × 512
    varlen[0] = 512;
    const auto mixed = b::add16_plan_pieces(seqs(varlen), 16, 128, 132);
    REQUIRE(mixed.size() == 5 + 63);
    index_t covered = 0;
    for (int i = 0; i < 5; ++i) {
      CHECK((mixed[i].seq == 0 && mixed[i].first == covered && mixed[i].head == 0 && mixed[i].of == 5));
      covered += mixed[i].count;
    }
    CHECK(covered == 512);
    CHECK((mixed[5].seq == 1 && mixed[5].of == 1 && mixed[5].first == 512 && mixed[5].count == 8 && mixed[5].head == 5));
  }
  SUBCASE("pieces of 1, 2 and 3 chunks") {
    for (const int c : {1, 2, 3}) {
      CAPTURE(c);
      pieces.c = c;
      direct_and_through_phases([] {
        check_backward<simple_gla, bf16>({.B = 1, .T = 450, .H = 2, .HV = 2, .K = 64, .V = 96, .initial_state = true,
                                          .gates = gate_range::extreme, .seed = 120});
        check_backward<additive, bf16>({.B = 2, .T = 300, .H = 1, .HV = 2, .K = 48, .V = 40, .initial_state = true, .seed = 121});
        check_backward<simple_gla, fp16>({.H = 2, .HV = 2, .K = 64, .V = 64, .seqlens = {400, 1, 0, 129, 64},
                                          .initial_state = true, .seed = 122});
      });
    }
  }
  SUBCASE("the automatic choice: one sequence of 256 chunks") {
    direct_and_through_phases([] {
      check_backward<simple_gla, bf16>({.B = 1, .T = 16384, .H = 2, .HV = 2, .K = 64, .V = 64, .initial_state = true,
                                        .seed = 123});
      check_backward<additive, bf16>({.B = 1, .T = 16384, .H = 1, .HV = 1, .K = 32, .V = 64, .seed = 124});
    });
  }
  SUBCASE("the automatic choice on a packed batch: one long sequence, short and empty ones, extreme gates") {
    // the plan must cut the 9000-token sequence (141 chunks: 3 pieces) and none of the others, on this device
    const std::vector<std::int64_t> lens{9000, 100, 64, 1, 0};
    std::vector<b::seq_chunks> seqs;
    index_t first = 0;
    for (const std::int64_t t : lens) seqs.push_back({first, index_t((t + 63) / 64)}), first += index_t((t + 63) / 64);
    int device = 0;
    REQUIRE(cudaGetDevice(&device) == cudaSuccess);
    const auto cut = b::add16_plan_pieces(seqs, 2, 64, std::size_t(cuda_detail::multiprocessor_count(device)));
    REQUIRE(cut.size() == 3 + 4);
    CHECK((cut[0].of == 3 && cut[2].index == 2 && cut[3].seq == 1 && cut[3].of == 1 && cut[6].count == 0));
    direct_and_through_phases([&] {
      check_backward<simple_gla, bf16>({.H = 2, .HV = 2, .K = 64, .V = 64, .seqlens = lens, .initial_state = true,
                                        .gates = gate_range::extreme, .seed = 125});
      check_backward<additive, bf16>({.H = 2, .HV = 2, .K = 48, .V = 64, .seqlens = lens, .initial_state = true,
                                      .seed = 126});
    });
  }
}

TEST_CASE("CUDA backward: in-kernel options (L2 norm, gates, beta activation)") {
  const case_shape s{.B = 2, .T = 90, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true, .seed = 5};
  check_backward<gated_delta, float>(s, {.qk_l2norm = true, .gate = true, .beta_act = beta_activation::sigmoid});
  check_backward<gated_delta, float>(s, {.gate = true, .lower_bound = true});
  check_backward<delta, bf16>(s, {.qk_l2norm = true, .beta_act = beta_activation::two_sigmoid});
  check_backward<simple_gla, float>(s, {.qk_l2norm = true, .gate = true});
  check_backward<kda, float>(s, {.qk_l2norm = true, .gate = true, .lower_bound = true, .beta_act = beta_activation::sigmoid});
  check_backward<gla, float>(s, {.gate = true});
}

// Issue #14: a decay gradient's terms that hold no decay — dP's diagonal, and the state write of a chunk's last
// token, undecayed to the chunk's end — went into dG twice with opposite signs and reach no dg_t; in float32 their
// roundings stayed, and under SPEC's extreme gates with one or two tokens (every other term decayed by ~e^-10)
// they swamped dg (fuzz seed 20261207 case 2518: simple_gla, CCQ uniform, T = 2, dg 1.1e-3; the CCQ case "kda,
// T = 1" above, dgk 9.9e-4). The scalar-decay kernel with both updates, the per-key one with both, h0 and dL/dS_T.
TEST_CASE("CUDA backward: decay gradients of one- and two-token sequences under extreme gates") {
  SUBCASE("identity read, T = 1 and 2") {
    for (const index_t T : {1, 2}) {
      CAPTURE(T);
      const case_shape s{.B = 1, .T = T, .H = 2, .HV = 2, .K = 63, .V = 48, .initial_state = true,
                         .gates = gate_range::extreme, .seed = std::uint32_t(50 + T)};
      check_backward<simple_gla, float>(s);
      check_backward<gated_delta, float>(s);
      check_backward<gla, float>(s);
      check_backward<kda, float>(s);
    }
  }
  SUBCASE("simple_gla, CCQ uniform, T = 2, h0, initial statistics (fuzz case 2518's shape)") {
    check_case<simple_gla, read::ccq<read::uniform>, float>(
        {.H = 1, .HV = 1, .K = 96, .V = 64, .seqlens = {2}, .initial_state = true, .gates = gate_range::extreme,
         .seed = 2518},
        {.ccq = {.initial_stats = true}});
  }
}

// Phase 4 of per-key decays factorises each diagonal 16-token block's decays through its middle token where the
// decay over either half stays within diag_span (40 nats; per_key_blocks.hpp) and keeps the exact per-(token,
// channel) sums where it does not. Log decays uniform in [−9, 0] (the extreme range × 0.45: ~36 nats over 8 tokens
// on average) put blocks on both sides of the bound within one chunk, one warp, one 8-channel tile.
TEST_CASE("CUDA backward: per-key decays around the diagonal blocks' span bound (factorised and exact blocks mixed)") {
  const case_shape s{.B = 1, .T = 150, .H = 1, .HV = 2, .K = 128, .V = 64, .initial_state = true,
                     .gates = gate_range::extreme, .seed = 61};
  const bwd_options mixed{.gk_scale = 0.45};
  check_backward<kda, float>(s, mixed);
  check_backward<gla, float>(s, mixed);
  check_backward<kda, bf16>(s, mixed);
  check_backward<kda, float>({.B = 2, .T = 77, .H = 2, .HV = 4, .K = 37, .V = 45, .gates = gate_range::extreme, .seed = 62},
                             mixed);
}

// T = 0: the gradients of the initial state are d_final_state's, and a contiguous dg [B, 0, HV] (stride 0 over B)
// is no g_gamma broadcast (found by tests/backend/cuda/fuzz, seed 20261202 case 9: it was rejected as one).
TEST_CASE("CUDA backward: T = 0") {
  check_backward<gated_delta, float>({.B = 2, .T = 0, .H = 2, .HV = 4, .K = 32, .V = 48, .initial_state = true, .seed = 8});
  check_backward<simple_gla, bf16>({.B = 1, .T = 0, .H = 1, .HV = 2, .K = 64, .V = 32, .seed = 9});
}

// `normalize` (the additive rule, identity read; backend/cuda/normalize_backward.hpp): positive q, k (backward_case),
// the normaliser's key sums per sequence (z_0 = 0) across chunk boundaries, tail chunks, GVA, scale, L2 norm.
TEST_CASE("CUDA backward: normalize (additive)") {
  const backward_options norm{.normalize = true};
  SUBCASE("float32, batch, T = 150 (a tail chunk), h0, GVA, scale") {
    check_case<additive, read::identity, float>(
        {.B = 2, .T = 150, .H = 2, .HV = 4, .K = 64, .V = 32, .initial_state = true, .seed = 41},
        {.normalize = true, .scale = 0.5});
  }
  SUBCASE("float32, packed sequences {70, 0, 5, 130}, GVA, L2 norm") {
    check_case<additive, read::identity, float>({.H = 2, .HV = 4, .K = 32, .V = 48, .seqlens = {70, 0, 5, 130}, .seed = 42},
                                                {.qk_l2norm = true, .normalize = true});
  }
  SUBCASE("float32, T = 300, K = V = 128") {
    check_case<additive, read::identity, float>({.B = 1, .T = 300, .H = 1, .HV = 1, .K = 128, .V = 128, .seed = 43}, norm);
  }
  SUBCASE("bf16, packed sequences {130, 0, 70}, GVA, L2 norm, h0") {
    check_case<additive, read::identity, bf16>(
        {.H = 1, .HV = 2, .K = 64, .V = 64, .seqlens = {130, 0, 70}, .initial_state = true, .seed = 44},
        {.qk_l2norm = true, .normalize = true});
  }
  SUBCASE("bf16, batch, T = 200") {
    check_case<additive, read::identity, bf16>({.B = 2, .T = 200, .H = 2, .HV = 2, .K = 128, .V = 64, .seed = 45}, norm);
  }
  SUBCASE("caller workspace of the queried size (the normaliser's scratch counted)") {
    backward_case<additive, read::identity, float> c({.H = 1, .HV = 2, .K = 32, .V = 48, .seqlens = {70, 0, 5, 130}, .seed = 46},
                                                     norm);
    cuda::mirror<float, float> m(c.args());
    cuda::gradient_mirror<float, float> gm(c.grads());
    auto plain = m.device;
    plain.normalize = false;
    const std::size_t bytes = cuda::backward_workspace_size<additive>(m.device);
    REQUIRE(bytes > cuda::backward_workspace_size<additive>(plain));
    void* ws = nullptr;
    cuda_ok(cudaMalloc(&ws, bytes));
    CHECK_THROWS_AS((linea::backward<additive, read::identity, backend::cuda>(
                        m.device, gm.device, cuda::launch{.workspace = ws, .workspace_bytes = bytes - 1})),
                    linea::error);
    linea::backward<additive, read::identity, backend::cuda>(m.device, gm.device,
                                                             cuda::launch{.workspace = ws, .workspace_bytes = bytes});
    gm.copy_back();
    cuda_ok(cudaFree(ws));
    c.check_against_reference();
  }
  SUBCASE("with the CCQ read: rejected, naming normalize") {
    using ccq = read::ccq<read::decayed>;
    backward_case<additive, ccq, float> c({.B = 1, .T = 20, .H = 1, .HV = 1, .K = 32, .V = 16, .seed = 47}, norm);
    cuda::mirror<float, float> m(c.args());
    cuda::gradient_mirror<float, float> gm(c.grads());
    CHECK_THROWS_WITH_AS((linea::backward<additive, ccq, backend::cuda>(m.device, gm.device)),
                         doctest::Contains("'normalize'"), linea::error);
  }
}

// How many elements of a backward case's gradient outputs are no longer the NaN they were filled with.
template <class Case>
int written_outputs(Case& c) {
  int written = 0;
  auto& out = const_cast<std::remove_cvref_t<decltype(c.out())>&>(c.out());
  out.for_each(out, [&](const char*, const auto& x, const auto&) {
    for (std::size_t i = 0; i < x.size(); ++i) written += !std::isnan(double(x.data()[i]));
  });
  return written;
}

// g_gamma's dg (a view with stride 0 over B and T of an [HV] buffer; or over T only, one element per (b, hv); or
// over B only, one per (t, hv)) gets the sum over the positions each element covers, in float64 (backward.hpp's
// summed_dg): the reference's summed dg, for simple_gla in float32 (phases 1-4) and bf16 (the additive fast path,
// which then does not write dg itself), and gated_delta in bf16, with initial states and packed sequences. The sums
// live in the workspace: a caller's of the queried size, filled with NaN bytes first and used by two calls in a row
// (each call zeroes them), then the cached one twice.
enum class dg_shared { batch_and_time, time, batch };
template <class Rule, class T>
void check_summed_dg(const case_shape& s, dg_shared shared) {
  backward_case<Rule, read::identity, T> c(s, {.g_gamma = true});
  auto args = c.args();
  auto grads = c.grads();
  tensor<T, 2> sums;  // dg's elements stride 0 over T only ([B, HV]) or over B only ([T, HV])
  if (shared == dg_shared::time) {
    sums = tensor<T, 2>({s.B, s.HV});
    grads.dg = strided<3>(sums.data(), {s.B, s.T, s.HV}, {s.HV, 0, 1});
  } else if (shared == dg_shared::batch) {
    sums = tensor<T, 2>({s.T, s.HV});
    grads.dg = strided<3>(sums.data(), {s.B, s.T, s.HV}, {0, s.HV, 1});
  }
  for (auto& x : sums.values()) x = T(std::nan(""));
  cuda::mirror<T, float> m(args);
  cuda::gradient_mirror<T, float> gm(grads);
  const std::size_t bytes = cuda::backward_workspace_size<Rule>(m.device, gm.device);
  CHECK(bytes <= cuda::backward_workspace_size<Rule>(m.device));
  void* ws = nullptr;
  cuda_ok(cudaMalloc(&ws, bytes));
  cuda_ok(cudaMemset(ws, 0xFF, bytes));
  for (int call = 0; call < 2; ++call)
    linea::backward<Rule, read::identity, backend::cuda>(m.device, gm.device,
                                                         cuda::launch{.workspace = ws, .workspace_bytes = bytes});
  cuda_ok(cudaDeviceSynchronize());
  cuda_ok(cudaFree(ws));
  for (int call = 0; call < 2; ++call) linea::backward<Rule, read::identity, backend::cuda>(m.device, gm.device);
  gm.copy_back();
  if (shared == dg_shared::batch_and_time) return c.check_against_reference();
  // the reference's per-position dg (a dense g of the same values) summed over the shared axis; the other gradients
  // as the reference's with the summed dg
  auto ra = c.ref_args();
  auto rg = c.ref_grads();
  tensor<double, 3> rdg({s.B, s.T, s.HV});
  rg.dg = rdg;
  reference::backward<Rule>(ra, rg);
  tensor<double, 2> want(sums.extents());
  for (index_t b = 0; b < s.B; ++b)
    for (index_t t = 0; t < s.T; ++t)
      for (index_t hv = 0; hv < s.HV; ++hv) want(shared == dg_shared::time ? b : t, hv) += rdg(b, t, hv);
  const double err = relative_error(sums.data(), want.data(), sums.size());
  CAPTURE(err);
  CHECK(err <= gradient_tolerance_for<T>());
  const auto& out = c.out();
  const auto& ref = c.reference_out();
  const auto close = [](const auto& x, const auto& r) {
    return x.size() == r.size() && relative_error(x.data(), r.data(), x.size()) <= gradient_tolerance_for<T>();
  };
  CHECK(close(out.dq, ref.dq));
  CHECK(close(out.dk, ref.dk));
  CHECK(close(out.dv, ref.dv));
  CHECK(close(out.dh0, ref.dh0));
}
TEST_CASE("CUDA backward: g_gamma's dg, summed over the positions of each element") {
  const case_shape batch{.B = 2, .T = 150, .H = 2, .HV = 2, .K = 64, .V = 48, .initial_state = true, .seed = 61};
  const case_shape gva{.B = 3, .T = 97, .H = 1, .HV = 2, .K = 32, .V = 40, .initial_state = true, .seed = 63};
  case_shape packed{.B = 1, .T = 150, .H = 1, .HV = 2, .K = 32, .V = 32, .initial_state = true, .seed = 62};
  packed.seqlens = {40, 0, 110};  // one empty sequence
  for (dg_shared shared : {dg_shared::batch_and_time, dg_shared::time, dg_shared::batch}) {
    CAPTURE(int(shared));
    check_summed_dg<simple_gla, float>(batch, shared);
    check_summed_dg<simple_gla, bf16>(batch, shared);
    check_summed_dg<gated_delta, bf16>(batch, shared);
    check_summed_dg<simple_gla, fp16>(gva, shared);
  }
  check_summed_dg<simple_gla, bf16>(packed, dg_shared::batch_and_time);
  check_summed_dg<gated_delta, float>(packed, dg_shared::batch_and_time);
}

// What the CUDA backward stores position by position is rejected where other backends sum or read in place: a
// stride-0 summed gradient (dβ, dλ, ... broadcast over positions) and dA_log / ddt_bias in place over A_log /
// dt_bias (the input-adjoint kernel reads them while adding into their gradients). Nothing is written.
TEST_CASE("CUDA backward: stride-0 summed gradients and in-place gate parameters are errors") {
  backward_case<gated_delta, read::identity, float> c({.B = 2, .T = 70, .H = 1, .HV = 2, .K = 32, .V = 32, .seed = 32},
                                                     {.gate = true});
  cuda::mirror<float, float> m(c.args());
  cuda::gradient_mirror<float, float> gm(c.grads());
  auto g = gm.device;
  const auto call = [&] { linea::backward<gated_delta, read::identity, backend::cuda>(m.device, g); };
  SUBCASE("dbeta with stride 0 over time") {
    g.dbeta.str[1] = 0;
    CHECK_THROWS_WITH_AS(call(), doctest::Contains("'dbeta' has shape [2, 70, 2] and stride 0 over axis 1: a summed"),
                         linea::error);
  }
  SUBCASE("dg with stride 0 over heads (only position axes are summed)") {
    g.dg.str[2] = 0;
    CHECK_THROWS_WITH_AS(call(), doctest::Contains("'dg' has shape [2, 70, 2] and stride 0 over axis 2"), linea::error);
  }
  SUBCASE("dA_log in place over gate.A_log") {
    g.dA_log.ptr = const_cast<float*>(m.device.gate.A_log.ptr);
    CHECK_THROWS_WITH_AS(call(), doctest::Contains("'dA_log' in place"), linea::error);
  }
  gm.copy_back();
  CHECK(written_outputs(c) == 0);  // untouched: every output still its NaN fill
}

// A caller's workspace that shares memory with an argument of the backward — a gradient, d_o, an input — is rejected
// before anything is written, naming both: the call overwrites its scratch while it still reads its inputs.
TEST_CASE("CUDA backward: a caller's workspace overlapping an argument is an error") {
  backward_case<gated_delta, read::identity, float> c({.B = 2, .T = 70, .H = 1, .HV = 2, .K = 32, .V = 32, .seed = 34},
                                                     {});
  cuda::mirror<float, float> m(c.args());
  cuda::gradient_mirror<float, float> gm(c.grads());
  const auto g = gm.device;
  const std::size_t bytes = cuda::backward_workspace_size<gated_delta>(m.device, g);
  REQUIRE(bytes > 0);
  const auto call = [&](const void* p) {
    linea::backward<gated_delta, read::identity, backend::cuda>(
        m.device, g, cuda::launch{.workspace = const_cast<void*>(p), .workspace_bytes = bytes});
  };
  CHECK_THROWS_WITH_AS(call(g.dk.ptr), doctest::Contains("'workspace' of cuda::launch"), linea::error);
  CHECK_THROWS_WITH_AS(call(g.dk.ptr), doctest::Contains("overlaps argument 'dk'"), linea::error);
  CHECK_THROWS_WITH_AS(call(g.d_o.ptr), doctest::Contains("overlaps argument 'd_o'"), linea::error);
  CHECK_THROWS_WITH_AS(call(m.device.v.ptr + 5), doctest::Contains("overlaps argument 'v'"), linea::error);
  gm.copy_back();
  CHECK(written_outputs(c) == 0);  // untouched: every output still its NaN fill
}

// Phase 4 writes the caller's dq, dk, dg / dgk, dβ itself where phase 5 would only convert them (backward.hpp's
// direct_grads_ok; phase 5 is not launched then): chunk_grad16_kernel (delta, gated_delta, 16-bit inputs) and
// per_key_grad_kernel (gla, kda, any input type). The same values as through phase 5 (below), into contiguous
// gradients and into strided ones (head-first rows; odd K: the pair stores' element path), within SPEC §6 of the float64
// reference; and not where phase 5 has work (GVA, L2 norm, in-kernel gate, β activation, CCQ, float32 scalar decays).
// Sets backward.hpp's direct_grads_enabled (the A/B switch, off under LINEA_BWD_DIRECT_GRADS_OFF) for a scope.
struct direct_grads_switch {
  bool saved = cuda_detail::bwd::direct_grads_enabled;
  explicit direct_grads_switch(bool on) { cuda_detail::bwd::direct_grads_enabled = on; }
  ~direct_grads_switch() { cuda_detail::bwd::direct_grads_enabled = saved; }
};

template <class Rule, class T>
void check_direct_gradients(index_t K, std::uint32_t seed) {
  backward_case<Rule, read::identity, T> c(
      {.B = 2, .T = 150, .H = 2, .HV = 2, .K = K, .V = 48, .initial_state = true, .seed = seed}, {});
  const auto a = c.args();
  REQUIRE(cuda_detail::bwd::direct_grads_ok<Rule, read::identity>(a) == cuda_detail::bwd::direct_grads_enabled);
  {
    const direct_grads_switch on(true);
    REQUIRE(cuda_detail::bwd::direct_grads_ok<Rule, read::identity>(a));
  }
  cuda::mirror<T, float> m(a);
  const auto run = [&](const gradients<T, float>& g, bool direct) {
    const direct_grads_switch use(direct);
    cuda::gradient_mirror<T, float> gm(g);
    linea::backward<Rule, read::identity, backend::cuda>(m.device, gm.device);
    gm.copy_back();
  };
  // a gradient view's elements in logical order, as doubles
  const auto values = [](const auto& x) {
    std::vector<double> out;
    if (!x.ptr) return out;
    for (index_t b = 0; b < x.extent(0); ++b)
      for (index_t t = 0; t < x.extent(1); ++t)
        for (index_t h = 0; h < x.extent(2); ++h) {
          if constexpr (std::remove_cvref_t<decltype(x)>::rank == 4) {
            for (index_t d = 0; d < x.extent(3); ++d) out.push_back(double(x(b, t, h, d)));
          } else {
            out.push_back(double(x(b, t, h)));
          }
        }
    return out;
  };
  const auto snapshot = [&](const gradients<T, float>& g) {
    return std::array{values(g.dq), values(g.dk), values(g.dg), values(g.dgk), values(g.dbeta)};
  };
  // dq, dk: the same bits (register accumulators, one rounding either way). dg, dgk, dβ: their row sums add through
  // shared-memory atomics, whose order differs from run to run (2⁻²⁴ of the terms) and may flip a rounding to T: at
  // most one unit in the last place of T, plus 1e-5 of the tensor's largest element for sums that cancel.
  const auto expect_same = [&](const auto& x, const auto& ref) {
    const char* names[] = {"dq", "dk", "dg", "dgk", "dbeta"};
    const double ulp = std::is_same_v<T, float> ? 0x1p-23 : std::is_same_v<T, bf16> ? 0x1p-7 : 0x1p-10;
    for (int i = 0; i < 5; ++i) {
      CAPTURE(names[i]);
      REQUIRE(x[i].size() == ref[i].size());
      double largest = 0;
      for (double y : ref[i]) largest = std::max(largest, std::abs(y));
      int off = 0;
      for (std::size_t e = 0; e < x[i].size(); ++e) {
        const double a = x[i][e], b = ref[i][e];
        const bool same = i < 2 ? a == b : std::abs(a - b) <= ulp * std::max(std::abs(a), std::abs(b)) + 1e-5 * largest;
        off += !same;
      }
      CHECK(off == 0);
    }
  };
  auto g = c.grads();
  run(g, false);  // through phase 5
  const auto through_phase5 = snapshot(g);
  g = c.grads();
  run(g, true);
  expect_same(snapshot(g), through_phase5);
  c.check_against_reference();
  // head-first gradients: every row strided (NaN-filled: an element left unwritten fails)
  tensor<T, 4> dq({2, 2, 150, K}), dk({2, 2, 150, K}), dgk({2, 2, 150, K});
  tensor<T, 3> dg({2, 2, 150}), dbeta({2, 2, 150});
  for (auto* x : {&dq, &dk, &dgk})
    for (auto& y : x->values()) y = T(std::nan(""));
  for (auto* x : {&dg, &dbeta})
    for (auto& y : x->values()) y = T(std::nan(""));
  auto hf = c.grads();
  hf.dq = logical4<T>(dq, true), hf.dk = logical4<T>(dk, true);
  if (hf.dg.ptr) hf.dg = logical3<T>(dg, true);
  if (hf.dgk.ptr) hf.dgk = logical4<T>(dgk, true);
  if (hf.dbeta.ptr) hf.dbeta = logical3<T>(dbeta, true);
  run(hf, true);
  expect_same(snapshot(hf), through_phase5);
}

TEST_CASE("CUDA backward: phase 4 writes dq, dk, dg / dgk, dbeta where phase 5 would only convert them") {
  SUBCASE("gated_delta bf16, K = 64") { check_direct_gradients<gated_delta, bf16>(64, 1901); }
  SUBCASE("gated_delta bf16, K = 37 (odd: no pair stores)") { check_direct_gradients<gated_delta, bf16>(37, 1902); }
  SUBCASE("delta bf16, K = 64") { check_direct_gradients<delta, bf16>(64, 1903); }
  SUBCASE("kda bf16, K = 37") { check_direct_gradients<kda, bf16>(37, 1904); }
  SUBCASE("gla float32, K = 64") { check_direct_gradients<gla, float>(64, 1905); }
  SUBCASE("packed sequences {70, 0, 5, 130} (a zero-length and a one-chunk sequence), gated_delta and kda bf16") {
    // (check_case: NaN-filled gradients, so a token left unwritten fails; against the float64 reference)
    const direct_grads_switch on(true);
    const case_shape packed{.H = 2, .HV = 2, .K = 32, .V = 24, .seqlens = {70, 0, 5, 130}, .initial_state = true,
                            .seed = 1906};
    REQUIRE(cuda_detail::bwd::direct_grads_ok<gated_delta, read::identity>(
        backward_case<gated_delta, read::identity, bf16>(packed, {}).args()));
    check_case<gated_delta, read::identity, bf16>(packed, {});
    check_case<kda, read::identity, bf16>(packed, {});
  }
  SUBCASE("not where phase 5 has work") {
    const direct_grads_switch on(true);
    using cuda_detail::bwd::direct_grads_ok;
    backward_case<gated_delta, read::identity, bf16> gva({.B = 1, .T = 10, .H = 1, .HV = 2, .K = 8, .V = 8}, {});
    CHECK_FALSE(direct_grads_ok<gated_delta, read::identity>(gva.args()));
    const case_shape s{.B = 1, .T = 10, .H = 2, .HV = 2, .K = 8, .V = 8};
    CHECK(direct_grads_ok<gated_delta, read::identity>(backward_case<gated_delta, read::identity, bf16>(s, {}).args()));
    CHECK_FALSE(direct_grads_ok<gated_delta, read::identity>(
        backward_case<gated_delta, read::identity, bf16>(s, {.qk_l2norm = true}).args()));
    CHECK_FALSE(direct_grads_ok<gated_delta, read::identity>(
        backward_case<gated_delta, read::identity, bf16>(s, {.gate = true}).args()));
    CHECK_FALSE(direct_grads_ok<gated_delta, read::identity>(
        backward_case<gated_delta, read::identity, bf16>(s, {.beta_act = beta_activation::sigmoid}).args()));
    CHECK_FALSE(direct_grads_ok<gated_delta, read::identity>(
        backward_case<gated_delta, read::identity, float>(s, {}).args()));
    CHECK_FALSE(direct_grads_ok<gated_delta, read::ccq<read::decayed>>(
        backward_case<gated_delta, read::identity, bf16>(s, {}).args()));
    CHECK(direct_grads_ok<kda, read::identity>(backward_case<kda, read::identity, bf16>(s, {}).args()));
    CHECK_FALSE(direct_grads_ok<kda, read::identity>(backward_case<kda, read::identity, bf16>(s, {.gate = true}).args()));
    CHECK_FALSE(direct_grads_ok<gdn2, read::identity>(backward_case<gdn2, read::identity, float>(s, {}).args()));
    CHECK_FALSE(direct_grads_ok<simple_gla, read::identity>(
        backward_case<simple_gla, read::identity, float>(s, {}).args()));
  }
}

TEST_CASE("CUDA backward: cuda::launch with a stream and a caller workspace") {
  check_backward<gated_delta, float>({.B = 2, .T = 100, .H = 2, .HV = 4, .K = 32, .V = 48, .initial_state = true, .seed = 6},
                                     {.own_stream = true});
  check_backward<kda, bf16>({.H = 1, .HV = 2, .K = 32, .V = 48, .seqlens = {70, 0, 5, 130}, .seed = 7},
                            {.own_stream = true});
  // 16-bit scalar decays in a workspace of exactly the queried size: phase 4's hand-over scratch, with the UT
  // transform's part (erasing rules) and without it
  check_backward<simple_gla, bf16>({.B = 2, .T = 130, .H = 2, .HV = 2, .K = 64, .V = 48, .seed = 8}, {.own_stream = true});
  check_backward<gated_delta, bf16>({.B = 2, .T = 130, .H = 2, .HV = 2, .K = 64, .V = 48, .seed = 9}, {.own_stream = true});
}

TEST_CASE("CUDA backward: the UT transform's scratch is carved for erasing rules only (16-bit inputs)") {
  backward_case<gated_delta, read::identity, bf16> c({.B = 2, .T = 200, .H = 2, .HV = 2, .K = 64, .V = 48, .seed = 10},
                                                     {});
  const auto a = c.args();
  // 200 tokens: 4 chunks a sequence, 2 sequences, 2 value heads; dBv [CL][V] and M [CL][CL] floats a (chunk, head).
  // (simple_gla with 16-bit inputs takes the additive fast path's smaller plan: its general plan is compared here.)
  const std::size_t ut = std::size_t(4 * 2 * 2) * (64 * 48 + 64 * 64) * sizeof(float);
  const std::size_t erasing = cuda::backward_workspace_size<gated_delta>(a),
                    additive_only = cuda_detail::bwd::plan_backward(a, false, false).bytes;
  const std::size_t dg_sums = sizeof(double) * 200 * 2;  // without gradients: room for a dg summed over B (T·HV)
  CHECK(erasing >= additive_only + ut + dg_sums);
  CHECK(erasing < additive_only + ut + dg_sums + 768);  // (256-byte alignment of the parts)
  backward_case<gated_delta, read::identity, float> f({.B = 2, .T = 200, .H = 2, .HV = 2, .K = 64, .V = 48, .seed = 10},
                                                      {});
  CHECK(cuda::backward_workspace_size<gated_delta>(f.args()) == cuda::backward_workspace_size<simple_gla>(f.args()));
}

// The additive fast path's workspace (backward/plan.hpp's slots): the bf16 chunk states and, through phases 0 and 5,
// the float32 inputs and dq, dk — not the general plan's tensors. Exact for the call's gradients, an upper bound
// without them; a workspace of exactly the exact size runs both forms (check_backward's own_stream cases) and one
// byte less is refused; with add16_enabled off (the general phases) the general plan is counted again.
TEST_CASE("CUDA backward: the additive fast path's workspace holds its own tensors only") {
  const case_shape s{.B = 2, .T = 200, .H = 2, .HV = 2, .K = 64, .V = 48, .initial_state = true, .seed = 11};
  backward_case<simple_gla, read::identity, bf16> c(s, {});
  cuda::mirror<bf16, float> m(c.args());
  cuda::gradient_mirror<bf16, float> gm(c.grads());
  const std::size_t chunks = 2 * 4, pc = chunks * 2, tokens = 400;
  const std::size_t states = 2 * pc * 64 * 48 * 2;                            // h, dH in bf16
  const std::size_t io = sizeof(float) * tokens * (2 * 2 * 64 + 2 * 2 * 48 + 2 * 2 + 2 * 2 * 64);  // phases 0 / 5
  const std::size_t direct = cuda::backward_workspace_size<simple_gla>(m.device, gm.device),
                    any = cuda::backward_workspace_size<simple_gla>(m.device),
                    general = cuda_detail::bwd::plan_backward(m.device, false, false).bytes;
  // without gradients also room for a dg summed over positions (g_gamma's): at most max(B, T)·HV float64 sums
  const std::size_t dg_sums = sizeof(double) * 200 * 2;
  CHECK(direct >= states);
  CHECK(direct < states + 5 * 256);
  CHECK(any >= states + io + dg_sums);
  CHECK(any < states + io + dg_sums + 14 * 256);
  CHECK(general > 2 * any);
  auto strided = gm.device;  // dq with a row stride of its own: not direct, so phases 0 and 5 (the io slots)
  strided.dq.str[3] = 2;
  strided.dq.str[2] *= 2, strided.dq.str[1] *= 2, strided.dq.str[0] *= 2;
  const std::size_t through_io = cuda::backward_workspace_size<simple_gla>(m.device, strided);
  CHECK(through_io + dg_sums <= any);
  CHECK(through_io + dg_sums + 256 >= any);
  bool& on = cuda_detail::bwd::add16_enabled;
  on = false;
  CHECK(cuda::backward_workspace_size<simple_gla>(m.device) >= general + dg_sums);
  CHECK(cuda::backward_workspace_size<simple_gla>(m.device) <= general + dg_sums + 256);
  on = true;
  void* ws = nullptr;
  cuda_ok(cudaMalloc(&ws, direct));
  CHECK_THROWS_WITH_AS((linea::backward<simple_gla, read::identity, backend::cuda>(
                           m.device, gm.device, cuda::launch{.workspace = ws, .workspace_bytes = direct - 1})),
                       doctest::Contains("workspace"), linea::error);
  linea::backward<simple_gla, read::identity, backend::cuda>(m.device, gm.device,
                                                             cuda::launch{.workspace = ws, .workspace_bytes = direct});
  cuda_ok(cudaDeviceSynchronize());
  cuda_ok(cudaFree(ws));
  gm.copy_back();
  c.check_against_reference();
}

}  // namespace linea::testing
