// linea/backend/cuda/backward/add16_pieces.hpp — the additive fast path's state passes on long sequences, cut into
// pieces (issue #14). A state pass is a chain over a sequence's chunks, one CTA per (value tile, value head,
// sequence): at 1×32768 (H = 16) that is 128 CTAs of 512 sequential steps, most SMs idle. The rules that only add
// have a linear chain with a scalar (or no) decay, so a sequence can be cut into pieces that run side by side:
//   1. end pass   each piece from a zero state (no chunk states stored): its end E_p and its decay Γ_p = e^(Σ log α)
//   2. combine    per sequence, in order: S_in(p + 1) = Γ_p S_in(p) + E_p (forward, S_in(0) = S_0); the reverse
//                 pass the same from the last piece down (dS_in(last) = dL/dS_T)
//   3. full pass  each piece from S_in(p): the chunk states (and dS_0 from the first piece) as the whole pass
// Steps 1 and 3 are add16_state_kernel with an add16_pieces argument; 2 is add16_combine_kernel here. Every sum is
// float32 (E_p, S_in in the workspace), so the pieces change only the order of float32 additions; the states are
// rounded to bf16 once, as without pieces. Γ_p ≤ 1 (log α ≤ 0): SPEC's extreme gates underflow, never overflow.
//
// When (add16_plan_pieces): only where a sequence's chain is longer than twice the chunk steps each CTA slot gets
// when the work is spread over the GPU (two CTAs an SM, 64-column tiles) and longer than 2 · min_piece_chunks;
// such a sequence is cut into pieces of near-equal length. 8×4096 (H = 16): no cut; 1×32768: 8 pieces of 64
// chunks; a batch of one 32768-token sequence and 63 of 512: the long one in 5 pieces.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <vector>

#include "work.hpp"

namespace linea::cuda_detail::bwd {

// A run of one sequence's chunks (in the chunk table), its place among the sequence's pieces.
struct add16_piece {
  index_t first = 0, count = 0;  // chunks in the table
  int seq = 0;                   // the sequence
  int index = 0, of = 1;         // this piece's place in its sequence, the sequence's pieces
  int head = 0;                  // the table index of the sequence's first piece
};

// What the state kernel and the combine read and write; piece == nullptr: no pieces (one CTA row per sequence, as
// w.seqs says), nothing handed over.
struct add16_pieces {
  const add16_piece* piece = nullptr;  // [count]
  index_t count = 0;
  float* end = nullptr;        // [count, HV, K, V]  the pass over the piece from a zero state
  float* in = nullptr;         // [count, HV, K, V]  the state entering the piece (the combine's)
  float* log_decay = nullptr;  // [count, HV]        Σ log α over the piece's tokens (scalar decays)
  bool end_only = false;       // step 1: no chunk states, the end into `end`

  __host__ __device__ std::size_t at(index_t p, index_t hv, index_t HV, index_t K, index_t V) const {
    return std::size_t(p * HV + hv) * std::size_t(K) * std::size_t(V);
  }
};

// 0: add16_plan_pieces decides; > 0: every sequence longer than this many chunks is cut into pieces of it (the
// suite's switch: pieces at small shapes); < 0: never cut — the A/B switch of the measurements, also set by the
// environment variable LINEA_BWD_ADD16_PIECES_OFF.
inline int add16_piece_chunks = std::getenv("LINEA_BWD_ADD16_PIECES_OFF") ? -1 : 0;
inline constexpr index_t min_piece_chunks = 64;

// The pieces of the plan's sequences (empty: none is cut). sms: the device's multiprocessor count.
inline std::vector<add16_piece> add16_plan_pieces(const std::vector<seq_chunks>& seqs, index_t HV, index_t V,
                                                  std::size_t sms) {
  std::vector<add16_piece> pieces;
  if (seqs.empty() || HV <= 0 || V <= 0) return pieces;
  index_t longest = 0, total = 0;
  for (const seq_chunks& s : seqs) longest = std::max(longest, s.count), total += s.count;
  index_t length = add16_piece_chunks;  // the chain each piece may keep
  if (length < 0) return pieces;
  if (length == 0) {
    const index_t tiles = (V + 63) / 64, slots = index_t(2 * std::max<std::size_t>(sms, 1));
    length = std::max(min_piece_chunks, (total * HV * tiles + slots - 1) / slots);
    if (longest <= 2 * length) return pieces;
  } else if (longest <= length) {
    return pieces;
  }
  index_t count = 0;  // the pieces' CTA rows go on the grid's z extent (≤ 65535), as the sequences' do without them
  for (const seq_chunks& s : seqs) count += std::max<index_t>(1, (s.count + length - 1) / length);
  if (count > 65535) return pieces;
  for (std::size_t n = 0; n < seqs.size(); ++n) {
    const seq_chunks s = seqs[n];
    const index_t of = std::max<index_t>(1, (s.count + length - 1) / length), head = index_t(pieces.size());
    for (index_t i = 0; i < of; ++i) {  // near-equal lengths: piece i takes chunks [i·count/of, (i + 1)·count/of)
      const index_t a = i * s.count / of, b = (i + 1) * s.count / of;
      pieces.push_back({s.first + a, b - a, int(n), int(i), int(of), int(head)});
    }
  }
  return pieces;
}

// Step 2: one CTA per (element block, value head, piece); the CTAs of a sequence's first piece walk its pieces (the
// others return). Forward: S = S_0, then S_in(i) = Γ_{i−1} S + E_{i−1} for i = 1 .. of − 1. Reverse: S = dL/dS_T,
// then dS_in(i) = Γ_{i+1} S + E_{i+1} for i = of − 2 .. 0.
template <bool Reverse, bool Decays>
__global__ void __launch_bounds__(threads) add16_combine_kernel(const work w, const add16_pieces pc,
                                                                 const view<const float, 4> init) {
  const add16_piece p = pc.piece[blockIdx.z];
  if (p.index != 0 || p.of < 2) return;
  const index_t hv = blockIdx.y, KV = w.K * w.V;
  for (index_t e = index_t(blockIdx.x) * threads + threadIdx.x; e < KV; e += index_t(gridDim.x) * threads) {
    const index_t r = e / w.V, j = e % w.V;
    float S = init.ptr ? init(p.seq, hv, r, j) : 0.f;
    for (int s = 1; s < p.of; ++s) {
      const index_t from = p.head + (Reverse ? p.of - s : s - 1), to = p.head + (Reverse ? p.of - 1 - s : s);
      const float gamma = Decays ? expf(pc.log_decay[from * w.HV + hv]) : 1.f;
      S = gamma * S + pc.end[pc.at(from, hv, w.HV, w.K, w.V) + e];
      pc.in[pc.at(to, hv, w.HV, w.K, w.V) + e] = S;
    }
  }
}

}  // namespace linea::cuda_detail::bwd
