// linea/segments/plan.hpp — how long sequences are cut into segments (pieces) so that one forward call runs them in
// parallel, and which launches the segmented forward makes (segments/forward.hpp). Host-only, no backend.
//
// A segment's map from its initial state to its final state is affine, S_end = M S_0 + B, so a sequence cut into
// pieces 0..R-1 is computed as:
//   pass A  every piece from a zero state: B_r is its final state (rules that only add, on the CUDA backend: a
//           reduction over slabs of the pieces, backend/cuda/piece_state_kernel.hpp — no serial walk, no outputs);
//   pass M  the transition M_r (erasing rules: the rule with v = 0 from S_0 = I; decay-only rules: its diagonal,
//           from S_0 = 1 with V = 1 — on the CUDA backend exp(Σ log α) over the piece, a kernel of its own that
//           reads only the gates, or, where pass A is the slab reduction, from the decay sums it keeps: no launch;
//           the additive rule: M = I, no pass);
//   combine S_init(0) = S_0,  S_init(r) = M_{r-1} S_init(r-1) + B_{r-1}   (chain.hpp);
//   pass C  every piece from S_init(r), writing the outputs (and the final state of the last piece).
// Only sequences longer than the piece length are cut; the others run once, in pass C. Passes A and M run over the
// cut sequences only, grouped into runs of neighbouring cut sequences (one launch per run); a run stops before
// the last piece of its last sequence (no transition of it is needed). Context parallelism (context_parallel.hpp)
// is the same combine with the ranks' segments as pieces.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "../config.hpp"

namespace linea::segments {

// One launch of passes A and M: packed tokens [t0, t1), cut at `cu` (offsets from t0), whose pieces' summaries
// are rows first_row .. first_row + pieces - 1 of the summary arrays.
struct run {
  index_t t0 = 0, t1 = 0;
  std::vector<std::int64_t> cu;
  index_t first_row = 0;
  index_t pieces() const { return static_cast<index_t>(cu.size()) - 1; }
};

// One chain of the combine: start from state row `start` of `from` (−1: zero) and apply links j = 0..links-1,
// S ← M[link + j·link_step] S + B[link + j·link_step]; with every_prefix the state after link j goes to row
// out + j·out_step of `to`, otherwise only the last one goes to row `out` (with no links: the start state itself).
struct chain {
  index_t start = -1;
  index_t links = 0, link = 0, link_step = 1;
  index_t out = 0, out_step = 1;
  bool every_prefix = true;
};

struct plan {
  index_t piece = 0;                     // tokens per piece (a multiple of 64); 0: nothing is cut
  std::vector<std::int64_t> starts;      // sequence n covers packed tokens [starts[n], starts[n+1])
  std::vector<index_t> pieces;           // R_n: pieces of sequence n (1: not cut)
  std::vector<std::int64_t> cu_all;      // pass C: every piece of every sequence, packed offsets
  std::vector<index_t> first_piece;      // pass C row (piece index) of sequence n's first piece
  std::vector<run> runs;                 // passes A and M
  std::vector<index_t> first_row;        // summary row of sequence n's first piece (−1: not cut)
  index_t rows = 0;                      // summary rows in all runs
  std::vector<chain> chains;             // the combine: S_init of the pieces of every cut sequence

  bool cuts() const { return !runs.empty(); }
  index_t sequences() const { return static_cast<index_t>(pieces.size()); }
  index_t total_pieces() const { return static_cast<index_t>(cu_all.size()) - 1; }
};

// The plan for sequences at packed offsets `starts` (N + 1 entries) cut into pieces of `piece` tokens: a sequence
// longer than `piece` becomes ⌈L / piece⌉ pieces, all `piece` long but its last.
inline plan make_plan(const std::vector<std::int64_t>& starts, index_t piece) {
  plan p;
  p.piece = piece;
  p.starts = starts;
  const index_t N = static_cast<index_t>(starts.size()) - 1;
  p.pieces.assign(N, 1);
  p.first_piece.assign(N, 0);
  p.first_row.assign(N, -1);
  p.cu_all = {starts.empty() ? 0 : starts[0]};
  for (index_t n = 0; n < N; ++n) {
    const index_t L = starts[n + 1] - starts[n];
    if (piece > 0 && L > piece) p.pieces[n] = (L + piece - 1) / piece;
    p.first_piece[n] = static_cast<index_t>(p.cu_all.size()) - 1;
    for (index_t r = 0; r < p.pieces[n]; ++r) p.cu_all.push_back(std::min(starts[n] + (r + 1) * piece, starts[n + 1]));
    p.cu_all.back() = starts[n + 1];
  }
  // Runs: neighbouring cut sequences share one launch of passes A and M; a run's last piece needs no summary.
  for (index_t n = 0; n < N; ++n) {
    if (p.pieces[n] < 2) continue;
    if (n == 0 || p.pieces[n - 1] < 2) p.runs.push_back({starts[n], starts[n], {0}, p.rows});
    run& r = p.runs.back();
    const bool last_of_run = n + 1 == N || p.pieces[n + 1] < 2;
    const index_t summarised = last_of_run ? p.pieces[n] - 1 : p.pieces[n];
    p.first_row[n] = p.rows;
    for (index_t k = 0; k < summarised; ++k) {
      r.cu.push_back(std::min(starts[n] + (k + 1) * piece, starts[n + 1]) - r.t0);
      ++p.rows;
    }
    r.t1 = r.t0 + r.cu.back();
  }
  for (index_t n = 0; n < N; ++n)
    if (p.pieces[n] >= 2)
      p.chains.push_back({p.first_piece[n], p.pieces[n] - 1, p.first_row[n], 1, p.first_piece[n] + 1, 1, true});
  return p;
}

// The cost model that picks the piece length, in token-steps of one CTA. A launch takes about
//   max(waves · longest piece, Σ pieces · units / slots),  waves = ⌈(pieces of at least half the longest) · units / slots⌉:
// one CTA per (piece, value head, value tile) walks its piece serially and the device runs `slots` CTAs at once.
// A segmented call costs `am_passes` launches over the cut sequences (pass A, and pass M relative to it), one over
// every piece (pass C), `link` steps per link of the longest chain (the combine is sequential along a sequence) and
// `fixed` steps (scratch, copies, small launches — and, for bandwidth-bound kernels, what the serial model misses).
// A pass M that runs on a kernel of its own with fewer CTAs per piece (`m_units`, e.g. the decay alone with V = 1)
// is one more launch over the cut sequences, `m_passes` times pass A's cost per step, instead of part of am_passes.
// The backend calibrates these (backend/cuda/segments.hpp); cutting is chosen when it saves at least `min_saving`
// of the whole call's modelled cost, with pieces that are multiples of 64 tokens and at least `min_piece` long.
struct cost_model {
  double slots = 132;     // CTAs the device runs at once
  double units = 1;       // CTAs per piece (value heads × value tiles)
  double am_passes = 2;   // pass A + pass M, in launches over the cut sequences
  double link = 0;        // steps per link of the combine's longest chain
  double fixed = 0;       // steps per segmented call
  double m_passes = 0;    // pass M on a kernel of its own: its cost per step, in pass A's (0: none)
  double m_units = 0;     // pass M's CTAs per piece
  index_t min_piece = 512;
  double overhead = 64;   // per piece, in tokens (a CTA's start)
  double min_saving = 0.15;  // the backend lowers it where the H200 measured cutting paying at a smaller margin
};

namespace detail {
// One launch over pieces of the given lengths (0-length entries ignored).
inline double launch_cost(const std::vector<index_t>& pieces, const cost_model& m) {
  index_t longest = 0;
  double work = 0;
  for (index_t L : pieces) longest = std::max(longest, L), work += static_cast<double>(L) + m.overhead;
  if (longest == 0) return 0;
  double big = 0;
  for (index_t L : pieces) big += 2 * L >= longest ? 1 : 0;
  const double waves = std::ceil(big * m.units / m.slots);
  return std::max(waves * (static_cast<double>(longest) + m.overhead), work * m.units / m.slots);
}
}  // namespace detail

// The piece length to use for these sequences (0: do not cut).
inline index_t choose_piece(const std::vector<std::int64_t>& starts, const cost_model& m) {
  const index_t N = static_cast<index_t>(starts.size()) - 1;
  std::vector<index_t> lengths(static_cast<std::size_t>(std::max<index_t>(N, 0)));
  index_t longest = 0;
  for (index_t n = 0; n < N; ++n) lengths[n] = starts[n + 1] - starts[n], longest = std::max(longest, lengths[n]);
  index_t best = 0;
  double best_cost = (1 - m.min_saving) * detail::launch_cost(lengths, m);
  std::vector<index_t> cut, all;
  for (index_t R = 2; R <= 256; ++R) {
    const index_t piece = ((longest + R - 1) / R + 63) / 64 * 64;
    if (piece < m.min_piece) break;
    cut.clear(), all.clear();
    index_t links = 0;
    for (index_t L : lengths) {
      const index_t parts = L > piece ? (L + piece - 1) / piece : 1;
      for (index_t k = 0; k < parts; ++k) {
        const index_t len = std::min(piece, L - k * piece);
        all.push_back(len);
        if (parts > 1) cut.push_back(len);
      }
      links = std::max(links, parts - 1);
    }
    double cost = m.am_passes * detail::launch_cost(cut, m) + detail::launch_cost(all, m) +
                  static_cast<double>(links) * m.link + m.fixed;
    if (m.m_passes > 0) {
      cost_model pass_m = m;
      pass_m.units = m.m_units;
      cost += m.m_passes * detail::launch_cost(cut, pass_m);
    }
    if (cost < best_cost) best_cost = cost, best = piece;
  }
  return best;
}

}  // namespace linea::segments
