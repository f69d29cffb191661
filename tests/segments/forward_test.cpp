// The segmented forward (include/linea/segments/): sequences cut into pieces, each piece's affine state map
// (transition M, contribution B) combined, every piece run again from its combined initial state. For every rule it
// equals the float64 reference within SPEC §5 and the unsplit chunkwise form closely, on batches and on packed
// sequences where only the long ones are cut; the plan's bookkeeping and the cost model's choices are checked too.
#include <doctest/doctest.h>

#include <linea/segments/segmented.hpp>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/rules.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

// Runs `shape` three ways — segmented (pieces of `piece` tokens), plain chunkwise, float64 reference — and checks o,
// the residual and the final state.
template <class Rule>
void check_segmented(const case_shape& shape, index_t piece) {
  auto seg = random_case<Rule, float>::make(shape);
  auto whole = random_case<Rule, float>::make(shape);
  auto ref = seg.template cast<double>();
  segmented_chunkwise<Rule>(seg.args(), piece);
  chunkwise<Rule>(whole.args());
  reference::recurrent<Rule>(ref.args());
  INFO(std::string(rule_name<Rule>::value), " piece=", piece, " ", describe_shape(seg.shape));
  const double tol = tolerance_for<float>(seg.shape.T);
  CHECK(relative_error(seg.o, ref.o) <= tol);
  CHECK(relative_error(seg.residual, ref.residual) <= tol);
  CHECK(relative_error(seg.ht, ref.ht) <= tol);
  // Against the unsplit form: the same function, only the rounding of the combine differs.
  CHECK(relative_error(seg.o, whole.o) <= tol);
  CHECK(relative_error(seg.ht, whole.ht) <= tol);
}

}  // namespace

TEST_CASE_TEMPLATE("segmented chunkwise equals the unsplit forward", Rule, LINEA_ALL_RULES) {
  // A batch (packed as rows), pieces of 64 with a partial last piece; K ≠ V (a transition scratch of its own).
  check_segmented<Rule>({.B = 2, .T = 300, .H = 1, .HV = 2, .K = 16, .V = 8, .initial_state = true}, 64);
  // K = V (the transition pass writes into o), GVA (two value heads per key head), no initial state.
  check_segmented<Rule>({.B = 1, .T = 257, .H = 1, .HV = 2, .K = 16, .V = 16}, 64);
  // Packed: short sequences between and around long ones, neighbouring long ones sharing a run, an empty one.
  check_segmented<Rule>({.H = 2, .HV = 4, .K = 8, .V = 8, .seqlens = {50, 300, 200, 20, 0, 129, 17, 257},
                         .initial_state = true},
                        64);
  // Strong decays: products of many small transitions.
  check_segmented<Rule>({.B = 1, .T = 200, .H = 1, .HV = 1, .K = 8, .V = 8, .initial_state = true,
                         .gates = gate_range::extreme},
                        32);
}

TEST_CASE("segment plan: pieces, runs and chains") {
  // Sequences of 50, 300, 200, 20 tokens cut at 64: the 300 and the 200 one (5 and 4 pieces) share one run.
  const segments::plan p = segments::make_plan({0, 50, 350, 550, 570}, 64);
  CHECK(p.pieces == std::vector<index_t>{1, 5, 4, 1});
  CHECK(p.total_pieces() == 11);
  CHECK(p.cu_all == std::vector<std::int64_t>{0, 50, 114, 178, 242, 306, 350, 414, 478, 542, 550, 570});
  REQUIRE(p.runs.size() == 1);
  // The run covers the 300 sequence's 5 pieces and the 200 one's first 3 (its last needs no summary).
  CHECK(p.runs[0].t0 == 50);
  CHECK(p.runs[0].t1 == 542);
  CHECK(p.runs[0].cu == std::vector<std::int64_t>{0, 64, 128, 192, 256, 300, 364, 428, 492});
  CHECK(p.rows == 8);
  CHECK(p.first_row == std::vector<index_t>{-1, 0, 5, -1});
  REQUIRE(p.chains.size() == 2);
  CHECK(p.chains[1].start == 6);  // the 200 sequence's first piece in pass C
  CHECK(p.chains[1].links == 3);
  CHECK(p.chains[1].link == 5);
  CHECK(p.chains[1].out == 7);
  // A short sequence between two long ones: two runs.
  CHECK(segments::make_plan({0, 200, 210, 410}, 64).runs.size() == 2);
  // Nothing longer than the piece: nothing cut.
  CHECK_FALSE(segments::make_plan({0, 64, 128}, 64).cuts());
}

TEST_CASE("segment cost model: cut only what cannot fill the device") {
  auto starts = [](std::vector<std::int64_t> lengths) {
    std::vector<std::int64_t> s{0};
    for (auto L : lengths) s.push_back(s.back() + L);
    return s;
  };
  std::vector<std::int64_t> varlen(64, 512);
  varlen[0] = 32768;
  // The H200's delta kernel as backend/cuda/segments.hpp models it (132 SMs, one CTA each, 16 value heads): the
  // choices its measurements favoured (bench/cuda/README.md).
  const segments::cost_model delta_kernel{
      .slots = 132, .units = 16, .am_passes = 1.65, .link = 48, .fixed = 800, .min_saving = 0.10};
  CHECK(segments::choose_piece(starts(std::vector<std::int64_t>(8, 4096)), delta_kernel) == 0);  // full already
  CHECK(segments::choose_piece(starts({16384, 16384}), delta_kernel) == 4096);  // 0.87 modelled, 0.91 measured
  CHECK(segments::choose_piece(starts({16384, 16384}), {.slots = 132, .units = 16, .am_passes = 2, .link = 320,
                                                        .fixed = 800}) == 0);  // at the default 15 % margin
  CHECK(segments::choose_piece(starts({32768}), delta_kernel) == 4096);  // 8 pieces × 16 heads: one wave
  CHECK(segments::choose_piece(starts(varlen), delta_kernel) == 4096);   // the long sequence only (512 < 4096)
  // The same choices under main d94ad0e's constants (passes A and M writing o, the row-wise combine at ~37 µs a link):
  // comb15's H200 sweep favoured them with the cheaper passes too (bench/cuda/README.md, comb15).
  const segments::cost_model delta_kernel_main{
      .slots = 132, .units = 16, .am_passes = 2, .link = 320, .fixed = 800, .min_saving = 0.10};
  for (const auto& lengths : {std::vector<std::int64_t>(8, 4096), std::vector<std::int64_t>{16384, 16384},
                              std::vector<std::int64_t>{32768}, varlen})
    CHECK(segments::choose_piece(starts(lengths), delta_kernel) == segments::choose_piece(starts(lengths), delta_kernel_main));
  // The general kernel's erasing rules (kda, gdn2), two CTAs per SM over 64 columns: 4096 where the sweep found
  // 4096 and 2048 within 0.1 %.
  const segments::cost_model general_erasing{.slots = 264, .units = 32, .am_passes = 1.7, .link = 15, .fixed = 300};
  CHECK(segments::choose_piece(starts(std::vector<std::int64_t>(8, 4096)), general_erasing) == 0);
  CHECK(segments::choose_piece(starts({16384, 16384}), general_erasing) == 4096);
  CHECK(segments::choose_piece(starts({32768}), general_erasing) == 4096);
  CHECK(segments::choose_piece(starts(varlen), general_erasing) == 4096);
  // The scalar 64-token kernel with simple_gla's costly pass M counted as more launches of pass A: only the lone
  // long sequence is worth cutting.
  const segments::cost_model scalar_kernel{.slots = 264, .units = 32, .am_passes = 3.7, .link = 70, .fixed = 6000};
  CHECK(segments::choose_piece(starts({16384, 16384}), scalar_kernel) == 0);
  CHECK(segments::choose_piece(starts({32768}), scalar_kernel) == 4096);
  CHECK(segments::choose_piece(starts(varlen), scalar_kernel) == 0);
  // Pass M on a kernel of its own with one CTA per piece and head (simple_gla's general pass M, as main 861c7ef modelled it):
  // shorter pieces fill the device for it, 2048 at 1×32768 (measured 1.41 ms against 1.65 for 4096 on the H200).
  const segments::cost_model scalar_own_m{
      .slots = 264, .units = 32, .am_passes = 1, .link = 70, .fixed = 6000, .m_passes = 2.7, .m_units = 16};
  CHECK(segments::choose_piece(starts(std::vector<std::int64_t>(8, 4096)), scalar_own_m) == 0);
  CHECK(segments::choose_piece(starts({16384, 16384}), scalar_own_m) == 0);
  CHECK(segments::choose_piece(starts({32768}), scalar_own_m) == 2048);
  // Pass M of the decay-only rules from the decay sums (backend/cuda/decay_product_kernel.hpp, seg12): the backend
  // models simple_gla as the additive rule and gla as its kernel's pass A alone, each plus 5 % of pass A for the sums
  // (a read of the gates). The choices are those the H200 measured for the additive rule, whose segmented call has
  // no pass M (linear_attn at 1×32768: 0.669 ms in pieces of 4096 against 0.712 for 2048; at 2×16384 0.666 against
  // 0.712 whole, bench/cuda/README.md fwd7) — and for gla the ones main chose (4096 at 1×32768 and 2×16384).
  const segments::cost_model scalar_decay_sums{
      .slots = 264, .units = 32, .am_passes = 1.05, .link = 70, .fixed = 6000, .min_saving = 0.10};
  CHECK(segments::choose_piece(starts(std::vector<std::int64_t>(8, 4096)), scalar_decay_sums) == 0);
  CHECK(segments::choose_piece(starts({16384, 16384}), scalar_decay_sums) == 4096);
  CHECK(segments::choose_piece(starts({32768}), scalar_decay_sums) == 4096);
  CHECK(segments::choose_piece(starts(varlen), scalar_decay_sums) == 4096);
  const segments::cost_model perkey_decay_sums{.slots = 132, .units = 16, .am_passes = 1.05, .link = 20, .fixed = 300};
  CHECK(segments::choose_piece(starts(std::vector<std::int64_t>(8, 4096)), perkey_decay_sums) == 0);
  CHECK(segments::choose_piece(starts({16384, 16384}), perkey_decay_sums) == 4096);
  CHECK(segments::choose_piece(starts({32768}), perkey_decay_sums) == 4096);
  CHECK(segments::choose_piece(starts(varlen), perkey_decay_sums) == 4096);
  // Pass A of the rules that only add by slabs (backend/cuda/piece_state_kernel.hpp, segA15): modelled as the
  // fraction of the chunk kernel's launch the H200 measured it to save (0.55 on the scalar kernel: linear_attn and
  // simple_gla; 0.9 on gla's), plus the decay sums. Pieces of 4096 stay the choice, the best measured at 1×32768,
  // 2×16384 and 32768 + 63×512 for all three rules but gla's packed case (8192: 3.44 ms against 3.52), and 8×4096
  // stays whole (0.32 ms against 0.59 cut at 1024; bench/cuda/README.md segA15).
  for (const double decay : {0.0, 0.05}) {
    const segments::cost_model scalar_slabs{
        .slots = 264, .units = 32, .am_passes = 0.55 + decay, .link = 70, .fixed = 6000, .min_saving = 0.10};
    CHECK(segments::choose_piece(starts(std::vector<std::int64_t>(8, 4096)), scalar_slabs) == 0);
    CHECK(segments::choose_piece(starts({16384, 16384}), scalar_slabs) == 4096);
    CHECK(segments::choose_piece(starts({32768}), scalar_slabs) == 4096);
    CHECK(segments::choose_piece(starts(varlen), scalar_slabs) == 4096);
  }
  const segments::cost_model perkey_slabs{.slots = 132, .units = 16, .am_passes = 0.95, .link = 20, .fixed = 300};
  CHECK(segments::choose_piece(starts(std::vector<std::int64_t>(8, 4096)), perkey_slabs) == 0);
  CHECK(segments::choose_piece(starts({16384, 16384}), perkey_slabs) == 4096);
  CHECK(segments::choose_piece(starts({32768}), perkey_slabs) == 4096);
  CHECK(segments::choose_piece(starts(varlen), perkey_slabs) == 4096);
  // seg16: pass A by slabs with the float4 reduce, and pass M from its decay sums (no launch of its own): 0.45 of pass
  // C's launch on the scalar kernel (linear_attn 0.138 / 0.322 ms, simple_gla 0.168 / 0.362 at 1×32768 in pieces of
  // 4096), 0.9 on gla's. The choices stay those the H200 measured best (bench/cuda/README.md, seg16): 4096 at
  // 1×32768, 2×16384 and 32768 + 63×512, 8×4096 whole.
  const segments::cost_model scalar_seg16{
      .slots = 264, .units = 32, .am_passes = 0.45, .link = 70, .fixed = 6000, .min_saving = 0.10};
  const segments::cost_model perkey_seg16{.slots = 132, .units = 16, .am_passes = 0.9, .link = 20, .fixed = 300};
  for (const auto& m : {scalar_seg16, perkey_seg16}) {
    CHECK(segments::choose_piece(starts(std::vector<std::int64_t>(8, 4096)), m) == 0);
    CHECK(segments::choose_piece(starts({16384, 16384}), m) == 4096);
    CHECK(segments::choose_piece(starts({32768}), m) == 4096);
    CHECK(segments::choose_piece(starts(varlen), m) == 4096);
  }
  // Waves: pieces that need a second wave cost it; no piece below min_piece.
  const segments::cost_model cheap{.slots = 132, .units = 16, .am_passes = 1};
  const index_t one = segments::choose_piece(starts({32768}), cheap);
  CHECK(one >= 512);
  CHECK(32768 / one * 16 <= 132 * 2);
  CHECK(segments::choose_piece(starts({64, 64}), cheap) == 0);
  CHECK(segments::choose_piece(starts({}), cheap) == 0);
}
