// tests/backend/cuda/segments_test.cu — intra-sequence parallelism and context parallelism on the GPU
// (backend/cuda/segments.hpp, segments/): the chunkwise form with long sequences cut into pieces (forced piece
// lengths and the automatic choice), context_parallel over simulated ranks (threads, one stream each, on one
// device) and over NCCL with one rank — each against the float64 reference within SPEC §5, every rule, bf16 (the
// 64-token kernels) and float32 (the general kernel), packed sequences with one long and several short ones.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <thread>

#include "backend/cuda/consistency.hpp"
#include "support/rejection.hpp"
#include "support/rules.hpp"
#include "support/slice.hpp"

#include <linea/backend/cuda/nccl_transport.hpp>

namespace linea::testing {
namespace {

template <class Rule, class T>
void check_against_reference(random_case<Rule, T>& c, const char* what) {
  auto ref = c.template cast<double>();
  reference::recurrent<Rule>(ref.args());
  INFO(std::string(rule_name<Rule>::value) << " " << type_name<T>() << " " << what << " " << describe_shape(c.shape));
  const double tol = tolerance_for<T>(c.shape.T);
  expect_close("o", c.o, ref.o, tol);
  expect_close("residual", c.residual, ref.residual, tol);
  expect_close("final state", c.ht, ref.ht, tol);
}

template <class Rule, class T>
void check_segmented(const case_shape& shape, std::int64_t piece) {
  auto c = random_case<Rule, T>::make(shape);
  {
    device_case<Rule, T> d{c};
    linea::chunkwise<Rule, read::identity, backend::cuda>(d.args(c.args()), cuda::launch{.segment_tokens = piece});
    d.back();
  }
  check_against_reference(c, piece > 0 ? "segmented" : "automatic");
}

// Rank r of `cuts.size() - 1` ranks holds tokens [cuts[r], cuts[r+1]) of every row; each rank is a thread with a
// stream of its own, exchanging through device copies; launch_of(r, stream, shard, transport) gives its
// cuda::launch (called on the rank's thread). c's outputs are the device's afterwards.
template <class Rule, class T>
using cp_launch_of = std::function<cuda::launch(int, cudaStream_t, const arguments<T, float>&, cp::transport&)>;

template <class Rule, class T>
void run_context_parallel(random_case<Rule, T>& c, const std::vector<index_t>& cuts, const cp_launch_of<Rule, T>& launch_of) {
  const int ranks = static_cast<int>(cuts.size()) - 1;
  {
    device_case<Rule, T> d{c};
    const auto all = d.args(c.args());
    cp::local_group group(ranks, [](void* dst, const void* src, std::size_t n) { cuda_ok(cudaMemcpy(dst, src, n, cudaMemcpyDefault)); });
    std::vector<cudaStream_t> streams(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      cuda_ok(cudaStreamCreate(&streams[r]));
      group.on_ready(r, [s = streams[r]] { cuda_ok(cudaStreamSynchronize(s)); });
    }
    std::vector<std::exception_ptr> failed(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        try {
          auto a = time_slice_args(all, cuts[r], cuts[r + 1]);
          if (r != 0) a.initial_state = {};
          if (r != ranks - 1) a.final_state = {};
          context_parallel<Rule, read::identity, backend::cuda>(a, group.rank(r),
                                                                launch_of(r, streams[r], a, group.rank(r)));
          cuda_ok(cudaStreamSynchronize(streams[r]));
        } catch (...) {
          failed[r] = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
    for (auto s : streams) cudaStreamDestroy(s);
    for (auto& e : failed)
      if (e) std::rethrow_exception(e);
    d.back();
  }
}

// `piece`: cuda::launch::segment_tokens of every rank (−1: automatic; > 0: each rank cuts its shard into pieces).
template <class Rule, class T>
void check_context_parallel(const case_shape& shape, const std::vector<index_t>& cuts, std::int64_t piece = -1) {
  auto c = random_case<Rule, T>::make(shape);
  run_context_parallel<Rule, T>(c, cuts, [&](int, cudaStream_t s, const auto&, auto&) {
    return cuda::launch{.stream = s, .segment_tokens = piece};
  });
  check_against_reference(c, "context parallel");
}

template <class X, int R>
bool same_bytes(const tensor<X, R>& x, const tensor<X, R>& y) {
  return x.values().size() == y.values().size() &&
         std::memcmp(x.values().data(), y.values().data(), x.values().size() * sizeof(X)) == 0;
}

}  // namespace

TEST_CASE_TEMPLATE("CUDA segmented chunkwise equals the reference", Rule, LINEA_RULES) {
  // bf16, K = V = 64: the 64-token kernels; pieces of 128 tokens, a partial last one, an initial state.
  check_segmented<Rule, bf16>({.B = 2, .T = 700, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true}, 128);
  // float32 (the general kernel), K ≠ V (a transition scratch of its own), GVA.
  check_segmented<Rule, float>({.B = 1, .T = 600, .H = 1, .HV = 2, .K = 32, .V = 16}, 128);
  // K not a multiple of 4 (the combine reads M element by element), V not a multiple of its 16 columns per CTA.
  check_segmented<Rule, float>({.B = 1, .T = 400, .H = 1, .HV = 2, .K = 18, .V = 20}, 128);
  // Packed: one long sequence among short ones, the automatic choice too (the long one is cut or not, same result).
  const case_shape packed{.H = 2, .HV = 4, .K = 64, .V = 64, .seqlens = {3000, 64, 0, 100, 1500, 33}, .initial_state = true};
  check_segmented<Rule, bf16>(packed, 256);
  check_segmented<Rule, bf16>(packed, -1);
}

// Pass M of the decay-only rules (simple_gla, gla) from the summed log decays (decay_product_kernel.hpp): the gate
// options the chunk kernels take — the in-kernel gate (A_log, dt_bias, with and without the lower bound), a g_gamma
// broadcast (stride 0), extreme gates (down to −20 a step) and gates of exactly 0 — through the segmented forward
// (every piece's transition enters the combine) against the float64 reference.
namespace {
struct gate_options {
  bool in_kernel = false, lower = false, gamma = false, zeros = false;
};
template <class Rule, class T>
void check_segmented_gates(case_shape shape, std::int64_t piece, gate_options g) {
  constexpr bool per_key = reads(Rule::inputs, input::gk);
  auto c = random_case<Rule, T>::make(shape);
  std::mt19937 rng(shape.seed + 7);
  std::normal_distribution<double> normal(0.0, 1.0);
  if (g.in_kernel) {  // the gate inputs become logits
    if constexpr (per_key) for (auto& x : c.gk.values()) x = T(normal(rng));
    else for (auto& x : c.g.values()) x = T(normal(rng));
  }
  if (g.zeros)  // log decay −inf: first token, mid-piece, either side of a piece boundary, last token
    for (const index_t t : {index_t(0), index_t(37), piece - 1, piece, c.shape.T - 1})
      for (index_t hv = 0; hv < shape.HV; ++hv) {
        if constexpr (per_key) c.gk(0, t, hv, t % 3) = T(-std::numeric_limits<float>::infinity());
        else c.g(0, t, hv) = T(-std::numeric_limits<float>::infinity());
      }
  tensor<float, 1> A({shape.HV}), bias({per_key ? shape.HV * shape.K : shape.HV});
  for (auto& x : A.values()) x = float(0.5 * normal(rng));
  for (auto& x : bias.values()) x = float(0.5 * normal(rng));
  tensor<T, 1> gamma({shape.HV});
  for (auto& x : gamma.values()) x = T(-0.02 * std::abs(normal(rng)));  // g_gamma: small decays, long products
  auto options = [&](auto& a, const float* A_log, const float* dt_bias, const auto* gam) {
    if (g.in_kernel) {
      a.gate.A_log = contiguous<1>(A_log, {shape.HV});
      a.gate.dt_bias = contiguous<1>(dt_bias, {static_cast<index_t>(bias.size())});
      if (g.lower) a.gate.lower_bound = -5.0f;
    }
    if (g.gamma) a.g = strided<3>(gam, {shape.B, shape.T, shape.HV}, {0, 0, 1});
  };
  auto ref = c.template cast<double>();
  auto ra = ref.args();
  tensor<double, 1> gamma64({shape.HV});
  for (index_t h = 0; h < shape.HV; ++h) gamma64.data()[h] = double(gamma.data()[h]);
  options(ra, A.data(), bias.data(), gamma64.data());
  reference::recurrent<Rule>(ra);
  {
    device_case<Rule, T> d{c};
    auto a = d.args(c.args());
    options(a, d.pool.copy(A), d.pool.copy(bias), d.pool.copy(gamma));
    linea::chunkwise<Rule, read::identity, backend::cuda>(a, cuda::launch{.segment_tokens = piece});
    d.back();
  }
  INFO(rule_name<Rule>::value << " " << type_name<T>() << " piece " << piece << " " << describe_shape(shape)
                              << (g.in_kernel ? " in-kernel gate" : "") << (g.lower ? " lower bound" : "")
                              << (g.gamma ? " g_gamma" : "") << (g.zeros ? " zero gates" : ""));
  const double tol = tolerance_for<T>(shape.T);
  CHECK(all_finite(c.o));
  expect_close("o", c.o, ref.o, tol);
  expect_close("final state", c.ht, ref.ht, tol);
}
template <class Rule>
void check_decay_rule_gates() {
  const case_shape one{.B = 1, .T = 900, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true, .seed = 71};
  const case_shape odd{.B = 2, .T = 500, .H = 1, .HV = 3, .K = 40, .V = 24, .initial_state = true, .seed = 72};
  for (const bool lower : {false, true}) {
    check_segmented_gates<Rule, bf16>(one, 128, {.in_kernel = true, .lower = lower});
    check_segmented_gates<Rule, float>(odd, 128, {.in_kernel = true, .lower = lower});
  }
  check_segmented_gates<Rule, bf16>(one, 192, {.zeros = true});
  check_segmented_gates<Rule, float>(odd, 64, {.zeros = true});
  case_shape extreme = odd;
  extreme.gates = gate_range::extreme;
  check_segmented_gates<Rule, float>(extreme, 64, {});
  if constexpr (reads(Rule::inputs, input::g)) {
    check_segmented_gates<Rule, bf16>(one, 128, {.gamma = true});
    check_segmented_gates<Rule, float>(odd, 128, {.gamma = true});
  }
}

// The transitions themselves, one run of pieces: the decay sums equal the float64 product of the decays and the
// general pass M (the rule's chunk kernel with v = 0 and V = 1 from S_0 = 1), per piece, value head and key.
template <class Rule, class T>
void check_decay_transitions(const case_shape& shape, index_t piece) {
  constexpr bool per_key = reads(Rule::inputs, input::gk);
  auto c = random_case<Rule, T>::make(shape);
  std::mt19937 rng(shape.seed + 9);
  std::uniform_real_distribution<double> small(0.0, 0.003);  // log decays in [−0.003, 0]: products of ~1e-3 over 4096
  if constexpr (per_key) for (auto& x : c.gk.values()) x = T(-small(rng));
  else for (auto& x : c.g.values()) x = T(-small(rng));
  const index_t HV = shape.HV, K = shape.K;
  device_case<Rule, T> d{c};
  const auto a = d.args(c.args());
  const problem p = validate_chunkwise<Rule, read::identity>(a);
  const segments::plan pl = segments::make_plan(segments::sequence_starts(a, p), piece);
  REQUIRE(pl.runs.size() == 1);
  const segments::run& r = pl.runs[0];
  const auto pa = segments::slice(segments::packed_arguments(a), r.t0, r.t1);
  const index_t rows = r.pieces(), L = r.t1 - r.t0;
  tensor<float, 4> sums({rows, HV, K, 1}), general({rows, HV, K, 1});
  tensor<T, 4> o_scratch({1, L, HV, 1});
  tensor<T, 1> zeros({HV});
  for (auto& x : zeros.values()) x = T(0);
  {
    float* Ms = d.pool.copy(sums);
    float* Mg = d.pool.copy(general);
    cuda_detail::device_ops ops(nullptr);
    ops.decay_transitions<Rule>(pa, contiguous<4>(Ms, {rows, HV, K, 1}), r.cu);
    segments::transition_pass<Rule>(ops, pa, d.pool.copy(zeros), contiguous<4>(d.pool.copy(o_scratch), {1, L, HV, 1}),
                                    contiguous<4>(Mg, {rows, HV, K, 1}), r.cu);
    cuda_ok(cudaDeviceSynchronize());
    copy_back(sums, Ms), copy_back(general, Mg);
  }
  tensor<double, 4> product({rows, HV, K, 1});
  const std::vector<std::int64_t> starts = segments::sequence_starts(a, p);
  for (index_t k = 0; k < rows; ++k)
    for (index_t hv = 0; hv < HV; ++hv)
      for (index_t i = 0; i < K; ++i) {
        double s = 0;
        for (std::int64_t t = r.t0 + r.cu[k]; t < r.t0 + r.cu[k + 1]; ++t) {  // packed token t: row b, token t − starts[b]
          const index_t b = static_cast<index_t>(std::upper_bound(starts.begin(), starts.end(), t) - starts.begin()) - 1;
          if constexpr (per_key) s += double(c.gk(b, t - starts[b], hv, i));
          else s += double(c.g(b, t - starts[b], hv));
        }
        product(k, hv, i, 0) = std::exp(s);
      }
  INFO(rule_name<Rule>::value << " " << type_name<T>() << " " << describe_shape(shape) << " piece " << piece);
  // the same rounded gates in both: the sums' error is float32's (the log α, M's rounding); the general pass M's
  // that of its kernel (its tolerance for T, here the piece's length)
  expect_close("decay sums against the float64 product", sums, product, tolerance_for<float>(piece));
  expect_close("general pass M against the float64 product", general, product, tolerance_for<T>(piece));
  expect_close("decay sums against the general pass M", sums, general, tolerance_for<T>(piece));
}
}  // namespace

TEST_CASE("CUDA segmented chunkwise: decay-only rules, pass M from the summed log decays") {
  check_decay_rule_gates<simple_gla>();
  check_decay_rule_gates<gla>();
  // Two batch rows of 1000 tokens cut at 192 (the last piece of row 0 and the first of row 1 in one run), K = 72
  // (three key blocks, the last partial), and long pieces (4096 tokens: the sum of a whole piece's small decays).
  check_decay_transitions<simple_gla, bf16>({.B = 2, .T = 1000, .H = 1, .HV = 3, .K = 72, .V = 16}, 192);
  check_decay_transitions<gla, bf16>({.B = 2, .T = 1000, .H = 1, .HV = 3, .K = 72, .V = 16}, 192);
  check_decay_transitions<gla, float>({.B = 1, .T = 12288, .H = 1, .HV = 2, .K = 128, .V = 8}, 4096);
  check_decay_transitions<simple_gla, float>({.B = 1, .T = 12288, .H = 1, .HV = 2, .K = 8, .V = 8}, 4096);
}

// Pass A of the rules that only add (additive, simple_gla, gla) as a reduction over slabs of the pieces
// (piece_state_kernel.hpp, device_ops::piece_states): pieces long enough for several slabs, so the reduce kernel
// runs, a piece length not a multiple of the slab, GVA (H = 1, HV = 2), value tiles of 64 and a partial one, K < 128,
// the in-kernel L2 norm of k, extreme gates and gates of exactly 0, packed sequences with one long and short ones.
// Each: the segmented call against the float64 reference within SPEC §5, and the first run's piece states against
// main's pass A (the chunk kernel from zero, device_ops::forward) on the same inputs — and identical bytes when run
// twice (a fixed-order reduction), the second time with pass M fused (a rule with a decay: the transitions from the
// slabs' decay sums, against decay_transitions; weak gates keep the products of a piece away from 0).
namespace {
struct piece_options {
  bool l2 = false, zeros = false, weak = false;
};
template <class Rule, class T>
void check_piece_states(const case_shape& shape, std::int64_t piece, piece_options opt = {}) {
  constexpr bool per_key = reads(Rule::inputs, input::gk), scalar = reads(Rule::inputs, input::g);
  auto c = random_case<Rule, T>::make(shape);
  std::mt19937 rng(shape.seed + 11);
  std::uniform_real_distribution<double> unit(0.5, 2.0);
  if (opt.l2) {  // keys of any norm: the kernel normalises them
    for (auto& x : c.q.values()) x = T(double(x) * unit(rng));
    for (auto& x : c.k.values()) x = T(double(x) * unit(rng));
  }
  if (opt.weak) {  // log decays in [−0.003, 0]: a piece's product of ~0.1 .. 1
    std::uniform_real_distribution<double> small(0.0, 0.003);
    if constexpr (per_key) for (auto& x : c.gk.values()) x = T(-small(rng));
    if constexpr (scalar) for (auto& x : c.g.values()) x = T(-small(rng));
  }
  if (opt.zeros)  // log decay −inf: first token, mid-slab, either side of a piece boundary, last token
    for (const index_t t : {index_t(0), index_t(37), index_t(piece - 1), index_t(piece), c.shape.T - 1})
      for (index_t hv = 0; hv < shape.HV; ++hv) {
        if constexpr (per_key) c.gk(0, t, hv, t % 3) = T(-std::numeric_limits<float>::infinity());
        if constexpr (scalar) c.g(0, t, hv) = T(-std::numeric_limits<float>::infinity());
      }
  auto ref = c.template cast<double>();
  auto ra = ref.args();
  ra.qk_l2norm = opt.l2;
  reference::recurrent<Rule>(ra);
  const index_t HV = shape.HV, K = shape.K, V = shape.V;
  INFO(rule_name<Rule>::value << " " << type_name<T>() << " piece " << piece << " " << describe_shape(shape)
                              << (opt.l2 ? " l2" : "") << (opt.zeros ? " zero gates" : "") << (opt.weak ? " weak gates" : ""));
  constexpr bool decays = Rule::decay::kind != decay_kind::none;
  {
    device_case<Rule, T> d{c};
    auto a = d.args(c.args());
    a.qk_l2norm = opt.l2;
    // the first run's piece states, new and old
    const problem p = validate_chunkwise<Rule, read::identity>(a);
    const segments::plan pl = segments::make_plan(segments::sequence_starts(a, p), piece);
    REQUIRE(pl.cuts());
    const segments::run& r = pl.runs[0];
    auto pa = segments::slice(segments::packed_arguments(a), r.t0, r.t1);
    const index_t rows = r.pieces();
    tensor<float, 4> fresh({rows, HV, K, V}), again({rows, HV, K, V}), chunk({rows, HV, K, V});
    tensor<float, 4> fused({rows, HV, K, 1}), sums({rows, HV, K, 1});
    for (auto& x : fused.values()) x = std::numeric_limits<float>::quiet_NaN();  // every entry must be written
    float* B1 = d.pool.copy(fresh);
    float* B2 = d.pool.copy(again);
    float* B3 = d.pool.copy(chunk);
    float* M1 = d.pool.copy(fused);
    float* M2 = d.pool.copy(sums);
    {
      cuda_detail::device_ops ops(nullptr);
      pa.final_state = contiguous<4>(B1, {rows, HV, K, V});
      REQUIRE(ops.piece_states<Rule>(pa, r.cu));  // the new path runs for these inputs
      pa.final_state = contiguous<4>(B2, {rows, HV, K, V});
      REQUIRE(ops.piece_states<Rule>(pa, r.cu, decays ? contiguous<4>(M1, {rows, HV, K, 1}) : view<float, 4>{}));
      if constexpr (decays) ops.decay_transitions<Rule>(pa, contiguous<4>(M2, {rows, HV, K, 1}), r.cu);
      pa.final_state = contiguous<4>(B3, {rows, HV, K, V});
      ops.forward<Rule>(pa, r.cu);  // main's pass A
      cuda_ok(cudaDeviceSynchronize());
    }
    copy_back(fresh, B1), copy_back(again, B2), copy_back(chunk, B3);
    CHECK(all_finite(fresh));
    CHECK(same_bytes(fresh, again));
    expect_close("piece states against the chunk kernel's pass A", fresh, chunk, tolerance_for<T>(piece));
    if constexpr (decays) {
      copy_back(fused, M1), copy_back(sums, M2);
      // both from the same rounded gates: float32 sums (the fused one's clamped log₂ α) against decay_transitions'
      expect_close("fused pass M against decay_transitions", fused, sums, tolerance_for<float>(piece));
    }
    // the whole segmented call
    linea::chunkwise<Rule, read::identity, backend::cuda>(a, cuda::launch{.segment_tokens = piece});
    d.back();
  }
  const double tol = tolerance_for<T>(shape.T);
  CHECK(all_finite(c.o));
  expect_close("o", c.o, ref.o, tol);
  expect_close("final state", c.ht, ref.ht, tol);
}
template <class Rule, class T>
void check_piece_states_all() {
  // one sequence: pieces of 960 (slabs of 256: 256, 256, 256, 192), GVA, two value tiles
  const case_shape one{.B = 1, .T = 3000, .H = 1, .HV = 2, .K = 128, .V = 128, .initial_state = true, .seed = 81};
  check_piece_states<Rule, T>(one, 960);
  check_piece_states<Rule, T>(one, 960, {.l2 = true});
  // two rows (one run over both), K < 128, a partial value tile
  check_piece_states<Rule, T>({.B = 2, .T = 1700, .H = 2, .HV = 2, .K = 48, .V = 80, .seed = 82}, 640);
  // packed: one long sequence among short ones
  check_piece_states<Rule, T>({.H = 1, .HV = 2, .K = 64, .V = 64, .seqlens = {2500, 64, 0, 100, 1300, 33}, .initial_state = true, .seed = 83}, 704);
  if constexpr (Rule::decay::kind != decay_kind::none) {
    case_shape extreme = one;
    extreme.gates = gate_range::extreme;
    check_piece_states<Rule, T>(extreme, 1024);
    check_piece_states<Rule, T>(one, 1024, {.zeros = true});
    check_piece_states<Rule, T>(one, 960, {.weak = true});
  }
}
}  // namespace

TEST_CASE_TEMPLATE("CUDA segmented chunkwise: pass A of the rules that only add, by slabs", Rule, additive, simple_gla, gla) {
  check_piece_states_all<Rule, bf16>();
  check_piece_states_all<Rule, fp16>();
}

// The chunk kernels' states-only mode (kernel_args::states_only: the segmented forward's passes A and M): the final
// state is bit for bit that of the same call writing o, and o keeps its poison (no store). bf16 at K = V = 128 and
// 64 takes the 64-token kernels (delta_pipeline_kernel for delta and gated_delta; the others ignore the flag and
// write o), float32 the general kernel; packed sequences, an initial state, and a key of inf (the pipeline's flagged
// chunk path) in one case.
namespace {
template <class Rule, class T>
void check_states_only(const case_shape& shape, bool inf_key = false) {
  auto c = random_case<Rule, T>::make(shape);
  if (inf_key) c.k(0, 70, 0, 3) = T(std::numeric_limits<float>::infinity());
  device_case<Rule, T> d{c};
  const arguments<T, float> a = d.args(c.args());
  const problem p = validate_chunkwise<Rule, read::identity>(a);
  cuda_detail::run<Rule, read::identity, cuda_detail::form::chunkwise>(a, p, cuda::launch{});
  d.back();
  const auto full_state = c.ht;
  cuda_ok(cudaMemset(d.ht, 0xFF, c.ht.size() * sizeof(float)));
  cuda_ok(cudaMemset(d.o, 0xFF, c.o.size() * sizeof(T)));
  cuda_detail::run<Rule, read::identity, cuda_detail::form::chunkwise>(a, p, cuda::launch{}, /*states_only=*/true);
  d.back();
  auto poison = c.o;
  std::memset(poison.data(), 0xFF, poison.size() * sizeof(T));
  INFO(rule_name<Rule>::value << " " << type_name<T>() << " " << describe_shape(shape) << (inf_key ? " inf key" : ""));
  CHECK(same_bytes(c.ht, full_state));
  using cuda_detail::pass;
  constexpr bool honours = !std::is_same_v<T, bf16> || cuda_detail::delta_chunk_rule<Rule, pass::main> ||
                           !(cuda_detail::scalar_chunk_rule<Rule, pass::main> || cuda_detail::perkey_pipeline_rule<Rule, pass::main>);
  if (honours) CHECK(same_bytes(c.o, poison));  // the kernels that know the flag leave o alone
  else CHECK(!same_bytes(c.o, poison));
}
}  // namespace

TEST_CASE_TEMPLATE("CUDA chunk kernels: states only gives the same final state and writes no o", Rule, LINEA_RULES) {
  check_states_only<Rule, bf16>({.B = 2, .T = 300, .H = 2, .HV = 2, .K = 128, .V = 128, .initial_state = true});
  check_states_only<Rule, bf16>({.H = 1, .HV = 2, .K = 64, .V = 64, .seqlens = {200, 64, 0, 33}, .initial_state = true},
                                /*inf_key=*/true);
  check_states_only<Rule, float>({.B = 1, .T = 150, .H = 1, .HV = 2, .K = 40, .V = 24, .initial_state = true});
  check_states_only<Rule, float>({.B = 1, .T = 130, .H = 1, .HV = 2, .K = 128, .V = 128});
}

// The staged combine (staged_combine_kernel.hpp) against combine_kernel: the same FMAs in the same order, so the
// same bits — chains from a state row and from zero, every prefix written or the last only, a link step of 2, no
// links, with B and without (a product of transitions), at K = 128, 64, 36 and V = 128, 16, 32.
TEST_CASE("CUDA segment combine: the staged kernel equals the row-wise one bit for bit") {
  for (const auto& [K, V] : {std::pair<index_t, index_t>{128, 128}, {64, 16}, {36, 32}}) {
    const index_t HV = 3, links = 7, rows = 9;
    const segments::state_dims d{HV, K, V, K};
    std::mt19937 rng(static_cast<std::uint32_t>(K + V));
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> M(links * d.transition()), B(links * d.state()), from(rows * d.state());
    for (auto& x : M) x = normal(rng) / std::sqrt(static_cast<float>(K));
    for (auto& x : B) x = normal(rng);
    for (auto& x : from) x = normal(rng);
    const std::vector<segments::chain> chains{{0, 3, 0, 1, 1, 1, true},    // row 0, links 0..2 → rows 1..3
                                              {-1, 4, 3, 1, 4, 1, true},   // zero, links 3..6 → rows 4..7
                                              {2, 3, 0, 2, 8, 1, false},   // row 2, links 0, 2, 4 → row 8 only
                                              {5, 0, 0, 1, 0, 1, false}};  // no links: row 5 → row 0
    float *dM = nullptr, *dB = nullptr, *dfrom = nullptr, *staged = nullptr, *rowwise = nullptr;
    const std::size_t state_bytes = rows * d.state() * sizeof(float);
    cuda_ok(cudaMalloc(&dM, M.size() * sizeof(float))), cuda_ok(cudaMalloc(&dB, B.size() * sizeof(float)));
    cuda_ok(cudaMalloc(&dfrom, state_bytes)), cuda_ok(cudaMalloc(&staged, state_bytes)), cuda_ok(cudaMalloc(&rowwise, state_bytes));
    cuda_ok(cudaMemcpy(dM, M.data(), M.size() * sizeof(float), cudaMemcpyHostToDevice));
    cuda_ok(cudaMemcpy(dB, B.data(), B.size() * sizeof(float), cudaMemcpyHostToDevice));
    cuda_ok(cudaMemcpy(dfrom, from.data(), state_bytes, cudaMemcpyHostToDevice));
    for (const bool with_b : {true, false}) {
      INFO("K = " << K << ", V = " << V << (with_b ? "" : ", no B"));
      const float* b = with_b ? dB : nullptr;
      REQUIRE(cuda_detail::staged_combine_fits(dM, b, d));
      cuda_ok(cudaMemset(staged, 0xFF, state_bytes)), cuda_ok(cudaMemset(rowwise, 0xFF, state_bytes));
      {
        cuda_detail::device_ops ops(nullptr);
        ops.combine(dfrom, staged, dM, b, d, std::span<const segments::chain>(chains));
        ops.combine_rowwise(dfrom, rowwise, dM, b, d, std::span<const segments::chain>(chains));
        cuda_ok(cudaDeviceSynchronize());
      }
      std::vector<float> s(rows * d.state()), r(rows * d.state());
      cuda_ok(cudaMemcpy(s.data(), staged, state_bytes, cudaMemcpyDeviceToHost));
      cuda_ok(cudaMemcpy(r.data(), rowwise, state_bytes, cudaMemcpyDeviceToHost));
      CHECK(std::memcmp(s.data(), r.data(), state_bytes) == 0);
      CHECK(std::all_of(s.begin(), s.end(), [](float x) { return std::isfinite(x); }));  // rows 0..8 all written
    }
    cudaFree(dM), cudaFree(dB), cudaFree(dfrom), cudaFree(staged), cudaFree(rowwise);
  }
}

TEST_CASE_TEMPLATE("CUDA context parallel over simulated ranks equals the reference", Rule, LINEA_RULES) {
  check_context_parallel<Rule, bf16>({.B = 2, .T = 640, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true},
                                     {0, 192, 192, 448, 640});
  check_context_parallel<Rule, float>({.B = 1, .T = 300, .H = 1, .HV = 2, .K = 32, .V = 16, .initial_state = true},
                                      {0, 100, 300});
  // Every rank's shard cut into pieces of 64 tokens (cp::forward_pieces).
  check_context_parallel<Rule, bf16>({.B = 1, .T = 700, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true},
                                     {0, 200, 200, 450, 700}, 64);
}

// Context parallelism's scratch (summaries, the gathered ones, the pieces' states) is carved from the call's
// workspace (no allocation per call): a caller's workspace of context_parallel_workspace_size bytes per rank gives
// the cached workspace's bytes; one byte less is a clear error before anything is written.
TEST_CASE("CUDA context parallel: the scratch in a caller's workspace") {
  using Rule = gated_delta;
  const case_shape shape{.B = 1, .T = 700, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true};
  const std::vector<index_t> cuts{0, 200, 200, 450, 700};
  for (const std::int64_t piece : {std::int64_t(-1), std::int64_t(64)}) {  // shards whole; shards cut into pieces
    INFO("segment_tokens " << piece);
    auto cached = random_case<Rule, bf16>::make(shape);
    auto given = cached;
    run_context_parallel<Rule, bf16>(cached, cuts, [&](int, cudaStream_t s, const auto&, auto&) {
      return cuda::launch{.stream = s, .segment_tokens = piece};
    });
    std::vector<void*> ws(cuts.size() - 1, nullptr);
    std::vector<std::size_t> bytes(cuts.size() - 1, 0);
    run_context_parallel<Rule, bf16>(given, cuts, [&](int r, cudaStream_t s, const auto& a, auto& t) {
      cuda::launch l{.stream = s, .segment_tokens = piece};
      bytes[r] = cuda::context_parallel_workspace_size<Rule>(a, t, l);
      cuda_ok(cudaMalloc(&ws[r], bytes[r]));
      l.workspace = ws[r], l.workspace_bytes = bytes[r];
      return l;
    });
    for (void* p : ws) cudaFree(p);
    for (std::size_t r = 0; r < bytes.size(); ++r) {
      INFO("rank " << r);
      // at least its summary and every rank's gathered ones: (1 + ranks) end states and transitions [HV, K, 64] float32
      CHECK(bytes[r] >= 5 * 2 * sizeof(float) * 2 * 64 * 64);
    }
    CHECK(same_bytes(given.o, cached.o));
    CHECK(same_bytes(given.ht, cached.ht));
    check_against_reference(given, "context parallel, caller's workspace");
  }
  // One rank holding the whole sequence (the loopback transport), its workspace one byte short: rejected before
  // anything is written (device_case's outputs start as 0xFF bytes and come back as such).
  auto c = random_case<Rule, bf16>::make(shape);
  {
    device_case<Rule, bf16> d{c};
    const auto a = d.args(c.args());
    cp::loopback t(0, 1, [](void* dst, const void* src, std::size_t n) { cuda_ok(cudaMemcpy(dst, src, n, cudaMemcpyDefault)); });
    const std::size_t bytes = cuda::context_parallel_workspace_size<Rule>(a, t);
    CHECK(bytes > 0);
    void* ws = nullptr;
    cuda_ok(cudaMalloc(&ws, bytes));
    expect_error([&] { context_parallel<Rule, read::identity, backend::cuda>(a, t, {.workspace = ws, .workspace_bytes = bytes - 1}); },
                 {"'workspace'", std::to_string(bytes - 1) + " bytes", "needs " + std::to_string(bytes),
                  "context_parallel_workspace_size"});
    cuda_ok(cudaDeviceSynchronize());
    cudaFree(ws);
    d.back();
  }
  const auto segments_poisoned = [](const auto& t) {
    const auto* p = reinterpret_cast<const unsigned char*>(t.data());
    return std::all_of(p, p + t.size() * sizeof(*t.data()), [](unsigned char b) { return b == 0xFF; });
  };
  CHECK(segments_poisoned(c.o));
  CHECK(segments_poisoned(c.ht));
}

// Without a caller's workspace, context parallelism carves its scratch from the workspace linea keeps per (device,
// stream) and holds it for the whole call, exchange included. While another call holds it (here: this thread's
// lease; in use: another rank on the same stream, which then waits in the exchange for this one), the call throws
// at once, naming the way out, before anything is written — instead of waiting for ever. Once it is free, the same
// call runs.
TEST_CASE("CUDA context parallel: the cached workspace held by another call is an error (no wait)") {
  using Rule = gated_delta;
  const case_shape shape{.B = 1, .T = 300, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true};
  auto c = random_case<Rule, bf16>::make(shape);
  cudaStream_t stream = nullptr;
  cuda_ok(cudaStreamCreate(&stream));
  {
    device_case<Rule, bf16> d{c};
    const auto a = d.args(c.args());
    cp::loopback t(0, 1, [](void* dst, const void* src, std::size_t n) { cuda_ok(cudaMemcpy(dst, src, n, cudaMemcpyDefault)); });
    int device = 0;
    cuda_ok(cudaGetDevice(&device));
    {
      const auto held = cuda_detail::workspace_cache::instance().get(device, stream, 1);  // "another call"
      std::thread rank([&] {
        expect_error([&] { context_parallel<Rule, read::identity, backend::cuda>(a, t, {.stream = stream}); },
                     {"held by another call", "launch.workspace", "context_parallel_workspace_size"});
      });
      rank.join();
    }
    cuda_ok(cudaStreamSynchronize(stream));
    const auto poisoned = [](const auto& x) {
      const auto* p = reinterpret_cast<const unsigned char*>(x.data());
      return std::all_of(p, p + x.size() * sizeof(*x.data()), [](unsigned char b) { return b == 0xFF; });
    };
    tensor<bf16, 4> o(c.o.extents());
    copy_back(o, d.o);
    CHECK(poisoned(o));  // nothing written
    context_parallel<Rule, read::identity, backend::cuda>(a, t, {.stream = stream});  // the entry is free again
    cuda_ok(cudaStreamSynchronize(stream));
    d.back();
  }
  cuda_ok(cudaStreamDestroy(stream));
  check_against_reference(c, "context parallel, one rank, after the rejected call");
}

#if LINEA_HAS_NCCL && defined(LINEA_TEST_NCCL)
TEST_CASE("CUDA context parallel through NCCL, one rank") {
  auto c = random_case<gated_delta, bf16>::make({.B = 1, .T = 500, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true});
  {
    device_case<gated_delta, bf16> d{c};
    ncclComm_t comm;
    int device = 0;
    cuda_ok(cudaGetDevice(&device));
    cp::nccl_check(ncclCommInitAll(&comm, 1, &device), "ncclCommInitAll");
    cudaStream_t s;
    cuda_ok(cudaStreamCreate(&s));
    cp::nccl_transport t(comm, s);
    CHECK(t.size() == 1);
    context_parallel<gated_delta, read::identity, backend::cuda>(d.args(c.args()), t, cuda::launch{.stream = s});
    cuda_ok(cudaStreamSynchronize(s));
    cudaStreamDestroy(s);
    ncclCommDestroy(comm);
    d.back();
  }
  check_against_reference(c, "NCCL, one rank");
}
#endif

}  // namespace linea::testing
