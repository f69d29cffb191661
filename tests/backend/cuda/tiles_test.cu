// tests/backend/cuda/tiles_test.cu — value widths that leave the kernels' tiles partly empty: the chunk kernel splits V
// into tiles of 64 columns (two CTAs per head for the scalar-decay rules), the decode kernel into tiles of 128
// with four columns per lane. V = 100 gives a partial second chunk tile and a lane with 0 < columns < 4; K = 72
// leaves key rows of the state tiles empty. Scalar-decay rules (split tiles) and a per-key rule (one tile).
#include "backend/cuda/consistency.hpp"

namespace linea::testing {

template <class Rule>
void partial_tiles() {
  const case_shape seq{.B = 2, .T = 97, .H = 1, .HV = 2, .K = 72, .V = 100, .initial_state = true, .seed = 21};
  const case_shape one{.B = 5, .T = 1, .H = 1, .HV = 3, .K = 72, .V = 100, .initial_state = true, .seed = 22};
  check_against_reference<Rule, read::identity, cuda_chunkwise, bf16>(seq);
  check_against_reference<Rule, read::identity, cuda_chunkwise, fp16>(seq);
  check_against_reference<Rule, read::ccq<read::decayed>, cuda_chunkwise, bf16>(seq, {.initial_stats = true});
  check_against_reference<Rule, read::identity, cuda_step, float>(one);
  check_against_reference<Rule, read::identity, cuda_step, bf16>(one);
}

// The 64-token chunk kernels of the scalar-decay rules (scalar_chunk_kernel.hpp, delta_pipeline_kernel.hpp) need
// 16-byte aligned rows: V = 104 and K = 72 give them a partial value tile (the second of 40 columns in the scalar
// kernel, 104 of 128 in the delta kernel) and key rows past K, and T = 150 a last chunk of 22 tokens (V = 100 above
// runs the general kernel).
template <class Rule>
void partial_tiles_aligned() {
  const case_shape seq{.B = 2, .T = 150, .H = 1, .HV = 2, .K = 72, .V = 104, .initial_state = true, .seed = 23};
  check_against_reference<Rule, read::identity, cuda_chunkwise, bf16>(seq);
  check_against_reference<Rule, read::identity, cuda_chunkwise, fp16>(seq);
}

TEST_CASE("cuda: partial value tiles (V = 100, K = 72), gated_delta") { partial_tiles<gated_delta>(); }
TEST_CASE("cuda: partial value tiles (V = 100, K = 72), additive") { partial_tiles<additive>(); }
TEST_CASE("cuda: partial value tiles (V = 100, K = 72), kda") { partial_tiles<kda>(); }

}  // namespace linea::testing

namespace linea::testing {
TEST_CASE("cuda: partial tiles, aligned rows (V = 104, K = 72), additive") { partial_tiles_aligned<additive>(); }
TEST_CASE("cuda: partial tiles, aligned rows (V = 104, K = 72), simple_gla") { partial_tiles_aligned<simple_gla>(); }
TEST_CASE("cuda: partial tiles, aligned rows (V = 104, K = 72), delta") { partial_tiles_aligned<delta>(); }
TEST_CASE("cuda: partial tiles, aligned rows (V = 104, K = 72), gated_delta") { partial_tiles_aligned<gated_delta>(); }
}  // namespace linea::testing

// Which chunk kernel a call gets (docs/usage.md, "The CUDA backend"): the 64-token kernels need 16-bit inputs,
// contiguous 16-byte aligned q, k, v rows, K ≤ 128, no in-kernel L2 norm, no normalize, not the CCQ main pass.
TEST_CASE("cuda: the inputs the 64-token chunk kernels take") {
  using namespace linea;
  using cuda_detail::tiles::inputs_fit;
  alignas(16) static bf16 buf[16];
  auto args = [&](index_t K, index_t V, const bf16* p) {
    cuda_detail::kernel_args<bf16> k;
    k.q = contiguous<4>(p, {2, 64, 4, K}), k.k = contiguous<4>(p, {2, 64, 4, K}), k.v = contiguous<4>(p, {2, 64, 4, V});
    k.K = K, k.V = V;
    return k;
  };
  CHECK(inputs_fit(args(128, 128, buf)));
  CHECK(inputs_fit(args(72, 104, buf)));      // strides multiples of 8 elements
  CHECK_FALSE(inputs_fit(args(72, 100, buf)));  // v rows 200 bytes apart: not 16-byte aligned
  CHECK_FALSE(inputs_fit(args(136, 64, buf)));  // K > 128
  CHECK_FALSE(inputs_fit(args(64, 64, buf + 1)));  // base not 16-byte aligned
  auto k = args(64, 64, buf);
  k.l2q = k.l2k = true;
  CHECK_FALSE(inputs_fit(k));
  k = args(64, 64, buf);
  k.normalize = true;
  CHECK_FALSE(inputs_fit(k));
  cuda_detail::kernel_args<float> f;
  alignas(16) static float fbuf[16];
  f.q = contiguous<4>(static_cast<const float*>(fbuf), {2, 64, 4, 64}), f.k = f.q, f.v = f.q, f.K = 64, f.V = 64;
  CHECK_FALSE(inputs_fit(f));  // float inputs: the general kernel
}
