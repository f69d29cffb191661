// linea/segments/context_parallel.hpp — context parallelism: sequences sharded along T over R ranks (GPUs, or
// threads), each rank holding one segment of every sequence, combined exactly as the segmented forward combines
// pieces (plan.hpp):
//
//   linea::cp::transport& t = ...;                        // nccl_transport (CUDA), local_group (threads), loopback
//   linea::context_parallel<linea::gated_delta>(shard, t);                       // host backends
//   linea::context_parallel<linea::gated_delta, linea::read::identity, linea::backend::cuda>(shard, t, {.stream = s});
//
// `shard` is the rank's arguments: its tokens of the N sequences (B rows of its T_r tokens, or packed with its own
// cu_seqlens, sequence n being rank r's part of sequence n; a part may be empty). Rank 0 alone takes the initial
// state and the last rank alone writes the final state (either given on another rank is an error). Per rank:
//   summary      (B_r, M_r) per sequence: the end state of its segment from a zero state (rank 0: from the initial
//                state) and its transition (segments/forward.hpp's passes A and M);
//   exchange     one allgather each of B and M: N·HV·K·(V + KM) state-type values per rank (KM = K, 1 or 0);
//   pass C       rank r > 0 from S_init(r) = M_{r-1}(…(M_1 B_0 + B_1)…) + B_{r-1}, writing its outputs.
// A long shard is cut into pieces once (forward_pieces: each pass one launch over all its pieces, the pieces folded
// into the rank's summary); a shard that is not one packed row or too short runs as one piece (forward).
// The exchange is the transport's: the same code runs over NCCL, over threads of one process, or one rank alone.
#pragma once
#include <barrier>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "forward.hpp"

namespace linea::cp {

// How the ranks exchange their summaries. Memory is the backend's (host for cpu / generic, device for cuda); a
// CUDA transport orders the exchange on the stream the call was given.
class transport {
 public:
  virtual ~transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `bytes` bytes at `send`, in rank order, into `recv` (size() · bytes).
  virtual void allgather(const void* send, void* recv, std::size_t bytes) = 0;
};

using copy_fn = std::function<void(void* dst, const void* src, std::size_t bytes)>;
inline void host_copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

// R ranks as R threads of one process: member(r) is rank r's transport; each rank calls allgather from its own
// thread (a barrier waits for all). `ready` (per rank, optional) runs before the rank's data is read, e.g. a
// stream synchronisation; `copy` moves the bytes.
class local_group {
 public:
  explicit local_group(int ranks, copy_fn copy = host_copy)
      : sends_(static_cast<std::size_t>(ranks)), barrier_(ranks), copy_(std::move(copy)) {
    for (int r = 0; r < ranks; ++r) members_.push_back(std::make_unique<member>(*this, r));
  }
  transport& rank(int r) { return *members_.at(static_cast<std::size_t>(r)); }
  void on_ready(int r, std::function<void()> f) { members_.at(static_cast<std::size_t>(r))->ready = std::move(f); }

 private:
  struct member final : transport {
    member(local_group& g, int r) : group(g), me(r) {}
    int rank() const override { return me; }
    int size() const override { return static_cast<int>(group.sends_.size()); }
    void allgather(const void* send, void* recv, std::size_t bytes) override {
      if (ready) ready();
      group.sends_[static_cast<std::size_t>(me)] = send;
      group.barrier_.arrive_and_wait();
      for (int j = 0; j < size(); ++j) group.copy_(static_cast<char*>(recv) + j * bytes, group.sends_[static_cast<std::size_t>(j)], bytes);
      group.barrier_.arrive_and_wait();  // every send stays valid until all have read it
    }
    local_group& group;
    int me;
    std::function<void()> ready;
  };
  std::vector<const void*> sends_;
  std::barrier<> barrier_;
  copy_fn copy_;
  std::vector<std::unique_ptr<member>> members_;
};

// One rank of R alone, every rank's slot filled with its own data: the work and traffic of rank `r` without the
// others (for timing a rank on one device; the results are not the sharded sequence's).
class loopback final : public transport {
 public:
  loopback(int r, int ranks, copy_fn copy = host_copy) : r_(r), ranks_(ranks), copy_(std::move(copy)) {}
  int rank() const override { return r_; }
  int size() const override { return ranks_; }
  void allgather(const void* send, void* recv, std::size_t bytes) override {
    for (int j = 0; j < ranks_; ++j) copy_(static_cast<char*>(recv) + j * bytes, send, bytes);
  }

 private:
  int r_, ranks_;
  copy_fn copy_;
};

// The bytes a rank sends in one call (its summaries), for rule Rule and sizes p.
template <class Rule, class S>
std::size_t bytes_per_rank(const problem& p) {
  const segments::state_dims d{p.HV, p.K, p.V, segments::transition_columns<Rule>(p.K)};
  return static_cast<std::size_t>(p.N * (d.state() + d.transition())) * sizeof(S);
}

// The rank's S_init per sequence from the gathered summaries: rank 0's end state through ranks 1 .. r-1.
template <class Ops, class S>
S* fold_ranks(Ops& ops, const S* B_all, const S* M_all, const segments::state_dims& d, index_t N, int r) {
  S* init = ops.template alloc<S>(static_cast<std::size_t>(N * d.state()));
  std::vector<segments::chain> chains(static_cast<std::size_t>(N));
  for (index_t n = 0; n < N; ++n) chains[n] = {n, r - 1, N + n, N, n, 1, false};
  ops.combine(B_all, init, M_all, B_all, d, std::span<const segments::chain>(chains));
  return init;
}

// A rank whose shard is cut into pieces (plan `pl` over the packed shard): passes A and M over all its pieces in one
// launch each, its pieces folded into one summary per sequence before the exchange, pass C over all its pieces —
// the single-GPU segmented call's cost on T/R tokens, plus the exchange and the fold over ranks.
template <class Rule, class Ops, class T, class S>
void forward_pieces(Ops& ops, const arguments<T, S>& a, const problem& p, transport& t, const segments::plan& pl) {
  const int R = t.size(), r = t.rank();
  const segments::state_dims d{p.HV, p.K, p.V, segments::transition_columns<Rule>(p.K)};
  const index_t N = p.N, PC = pl.total_pieces();
  const std::span<const std::int64_t> cu(pl.cu_all);
  const arguments<T, S> x = segments::packed_arguments(a);
  S* Bp = ops.template alloc<S>(static_cast<std::size_t>(PC * d.state()));
  S* Mp = d.KM ? ops.template alloc<S>(static_cast<std::size_t>(PC * d.transition())) : nullptr;
  arguments<T, S> pa = segments::slice(x, 0, x.q.ext[1]);  // pass A: every piece from a zero state
  pa.final_state = segments::state_rows(Bp, PC, p.HV, p.K, p.V);
  ops.template forward<Rule>(pa, cu, segments::states_only_passes<Ops>);  // o: pass C's
  if (d.KM) {  // pass M (o is overwritten by pass C; when K ≠ V a scratch of its own; none for the decay sums)
    constexpr bool general_m = !segments::sums_decays<Rule, Ops>;
    const T* zeros = general_m ? ops.template zeros<T>(static_cast<std::size_t>(p.HV * d.KM)) : nullptr;
    const index_t L = x.q.ext[1];
    const view<T, 4> om = !general_m || d.KM == p.V
                              ? x.o
                              : contiguous<4>(ops.template alloc<T>(static_cast<std::size_t>(L * p.HV * d.KM)), {1, L, p.HV, d.KM});
    segments::transitions<Rule>(ops, pa, zeros, om, segments::state_rows(Mp, PC, p.HV, p.K, d.KM), cu);
  }
  // The rank's summary per sequence: its pieces folded (rank 0 from the initial state: its end state).
  S* B_send = ops.template alloc<S>(static_cast<std::size_t>(N * d.state()));
  S* M_send = d.KM ? ops.template alloc<S>(static_cast<std::size_t>(N * d.transition())) : nullptr;
  S* S0 = nullptr;
  std::vector<std::int32_t> same(static_cast<std::size_t>(N));
  for (index_t n = 0; n < N; ++n) same[n] = static_cast<std::int32_t>(n);
  if (r == 0 && !a.initial_state.empty()) {
    S0 = ops.template alloc<S>(static_cast<std::size_t>(N * d.state()));
    ops.copy_states(segments::state_rows(S0, N, p.HV, p.K, p.V), a.initial_state, same);
  }
  if (r < R - 1) {
    std::vector<segments::chain> fold(static_cast<std::size_t>(N));
    for (index_t n = 0; n < N; ++n) fold[n] = {S0 ? n : -1, pl.pieces[n], pl.first_piece[n], 1, n, 1, false};
    ops.combine(S0, B_send, Mp, Bp, d, std::span<const segments::chain>(fold));
    if (r > 0 && d.KM) {  // the product of its pieces' transitions: the same fold with M as the state, no B
      const segments::state_dims dm{p.HV, p.K, d.KM, d.KM};
      S* I = ops.template alloc<S>(static_cast<std::size_t>(dm.state()));
      ops.fill_identity(segments::state_rows(I, 1, p.HV, p.K, d.KM));
      for (index_t n = 0; n < N; ++n) fold[n].start = 0;
      ops.combine(I, M_send, Mp, static_cast<const S*>(nullptr), dm, std::span<const segments::chain>(fold));
    }
  }
  S* B_all = ops.template alloc<S>(static_cast<std::size_t>(R * N * d.state()));
  S* M_all = d.KM ? ops.template alloc<S>(static_cast<std::size_t>(R * N * d.transition())) : nullptr;
  t.allgather(B_send, B_all, static_cast<std::size_t>(N * d.state()) * sizeof(S));
  if (d.KM) t.allgather(M_send, M_all, static_cast<std::size_t>(N * d.transition()) * sizeof(S));
  // S_init of every piece: the rank's S_init at first pieces, then through the pieces' own summaries.
  const S* start = r == 0 ? S0 : fold_ranks(ops, B_all, M_all, d, N, r);
  S* C = ops.template alloc<S>(static_cast<std::size_t>(PC * d.state()));
  const view<S, 4> Cv = segments::state_rows(C, PC, p.HV, p.K, p.V);
  std::vector<std::int32_t> from(static_cast<std::size_t>(PC), -1);
  std::vector<segments::chain> inside;
  for (index_t n = 0; n < N; ++n) {
    from[pl.first_piece[n]] = static_cast<std::int32_t>(n);
    if (pl.pieces[n] > 1)
      inside.push_back({pl.first_piece[n], pl.pieces[n] - 1, pl.first_piece[n], 1, pl.first_piece[n] + 1, 1, true});
  }
  ops.copy_states(Cv, start ? segments::state_rows(start, N, p.HV, p.K, p.V) : view<const S, 4>{}, from);
  ops.combine(C, C, Mp, Bp, d, std::span<const segments::chain>(inside));
  arguments<T, S> pc = x;  // pass C
  pc.initial_state = Cv;
  pc.final_state = a.final_state.empty() ? view<S, 4>{} : Cv;
  ops.template forward<Rule>(pc, cu);
  if (!a.final_state.empty()) {
    std::vector<std::int32_t> last(static_cast<std::size_t>(N));
    for (index_t n = 0; n < N; ++n) last[n] = static_cast<std::int32_t>(pl.first_piece[n] + pl.pieces[n] - 1);
    ops.copy_states(a.final_state, view<const S, 4>(Cv), last);
  }
}

// The checks of a rank's place: a valid rank number, the initial state on rank 0 only, the final state on the last.
template <class T, class S>
void expect_rank_roles(const arguments<T, S>& a, const transport& t) {
  const int R = t.size(), r = t.rank();
  if (R < 1 || r < 0 || r >= R)
    throw error("context_parallel: transport rank " + std::to_string(r) + " of " + std::to_string(R) + " ranks");
  if (r != 0 && !a.initial_state.empty())
    throw error("argument 'initial_state' is read on rank 0 only; rank " + std::to_string(r) + " gave one");
  if (r != R - 1 && !a.final_state.empty())
    throw error("argument 'final_state' is written on the last rank (" + std::to_string(R - 1) + ") only; rank " +
                std::to_string(r) + " gave one");
}

// What each rank tells the others before any work, over a host-memory transport (local_group, loopback): whether its
// arguments passed their checks, and the sizes of its summaries. Without it a rank whose arguments were refused
// left the others waiting forever in the first exchange, and shards of different N, HV, K or V exchanged summaries
// of different sizes (reads past the smaller ones, silent garbage). `p`: the rank's problem, null where its checks
// threw (the caller rethrows that error after this returns). Throws on every other rank when one refused or when
// the sizes differ.
template <class Rule, class S>
void agree(transport& t, const problem* p) {
  struct header {
    std::int64_t ok, N, HV, K, V, bytes;
  };
  const int R = t.size();
  if (R < 1) return;  // (expect_rank_roles names it)
  const header mine = p ? header{1, p->N, p->HV, p->K, p->V, static_cast<std::int64_t>(bytes_per_rank<Rule, S>(*p))}
                        : header{0, 0, 0, 0, 0, 0};
  std::vector<header> all(static_cast<std::size_t>(R));
  t.allgather(&mine, all.data(), sizeof(header));
  std::string refused;
  for (int j = 0; j < R; ++j)
    if (!all[j].ok) refused += (refused.empty() ? "" : ", ") + std::to_string(j);
  if (!refused.empty()) {
    if (!p) return;
    throw error("context_parallel: rank " + refused + " refused its arguments (its own error says why); rank " +
                std::to_string(t.rank()) + " stops too, nothing written");
  }
  auto sizes = [](const header& h) {
    return "N = " + std::to_string(h.N) + ", HV = " + std::to_string(h.HV) + ", K = " + std::to_string(h.K) +
           ", V = " + std::to_string(h.V);
  };
  for (int j = 1; j < R; ++j)
    if (all[j].N != all[0].N || all[j].HV != all[0].HV || all[j].K != all[0].K || all[j].V != all[0].V ||
        all[j].bytes != all[0].bytes)
      throw error("context_parallel: the ranks' shards disagree: rank 0 has " + sizes(all[0]) + ", rank " +
                  std::to_string(j) + " has " + sizes(all[j]) +
                  " (or another rule or state type); every rank holds the same sequences and heads");
}

// The context-parallel forward of rank t.rank() over backend operations `ops` (host_ops, cuda segments' ops).
template <class Rule, class Ops, class T, class S>
void forward(Ops& ops, const arguments<T, S>& a, const problem& p, transport& t) {
  const int R = t.size(), r = t.rank();
  expect_rank_roles(a, t);
  if (segments::applies<read::identity>(a)) {  // a long shard: cut once, each pass one launch over its pieces
    const std::vector<std::int64_t> starts = segments::sequence_starts(a, p);
    const index_t piece = ops.template piece_for<Rule>(a, starts, p);
    if (piece > 0) {
      const segments::plan pl = segments::make_plan(starts, piece);
      if (pl.cuts()) return forward_pieces<Rule>(ops, a, p, t, pl);
    }
  }
  const segments::state_dims d{p.HV, p.K, p.V, segments::transition_columns<Rule>(p.K)};
  const index_t N = p.N;
  S* B_send = ops.template alloc<S>(static_cast<std::size_t>(N * d.state()));
  S* B_all = ops.template alloc<S>(static_cast<std::size_t>(R * N * d.state()));
  S* M_send = d.KM ? ops.template alloc<S>(static_cast<std::size_t>(N * d.transition())) : nullptr;
  S* M_all = d.KM ? ops.template alloc<S>(static_cast<std::size_t>(R * N * d.transition())) : nullptr;
  const view<S, 4> Bv = segments::state_rows(B_send, N, p.HV, p.K, p.V);

  if (r == 0 || r < R - 1) {  // pass A (rank 0: the real forward of its segment)
    const index_t B = a.v.ext[0], L = a.v.ext[1];
    // Ranks after 0 write pass A's and pass M's outputs where pass C's go, unless o is v (then v must survive).
    const bool o_free = !linea::detail::bytes_of(a.o).overlaps(linea::detail::bytes_of(a.v));
    auto scratch_o = [&](index_t cols) {
      return contiguous<4>(ops.template alloc<T>(static_cast<std::size_t>(B * L * p.HV * cols)), {B, L, p.HV, cols});
    };
    arguments<T, S> pa = a;
    pa.final_state = Bv;
    if (r > 0) {
      pa.residual = {};
      if (!o_free) pa.o = scratch_o(p.V);
    }
    ops.template forward<Rule>(pa, {});
    if (r > 0 && d.KM) {  // pass M
      constexpr bool general_m = !segments::sums_decays<Rule, Ops>;
      const T* zeros = general_m ? ops.template zeros<T>(static_cast<std::size_t>(p.HV * d.KM)) : nullptr;
      const view<T, 4> om = !general_m || (d.KM == p.V && o_free) ? a.o : scratch_o(d.KM);
      arguments<T, S> pm = a;
      pm.initial_state = {}, pm.final_state = {};
      segments::transitions<Rule>(ops, pm, zeros, om, segments::state_rows(M_send, N, p.HV, p.K, d.KM), {});
    }
  }
  t.allgather(B_send, B_all, static_cast<std::size_t>(N * d.state()) * sizeof(S));
  if (d.KM) t.allgather(M_send, M_all, static_cast<std::size_t>(N * d.transition()) * sizeof(S));

  if (r == 0) {
    if (R == 1 && !a.final_state.empty()) {
      std::vector<std::int32_t> same(static_cast<std::size_t>(N));
      for (index_t n = 0; n < N; ++n) same[n] = static_cast<std::int32_t>(n);
      ops.copy_states(a.final_state, view<const S, 4>(Bv), same);
    }
    return;
  }
  // S_init(r): from rank 0's end state through the transitions and contributions of ranks 1 .. r-1.
  S* init = fold_ranks(ops, B_all, M_all, d, N, r);
  arguments<T, S> pc = a;  // pass C
  pc.initial_state = segments::state_rows(init, N, p.HV, p.K, p.V);
  ops.template forward<Rule>(pc, {});
}

}  // namespace linea::cp

namespace linea {

// Context parallelism on the host backends (cpu, generic): the rank's shard, its transport, and optionally the
// piece length its shard is cut into (0: one piece). Identity read only, without normalize (the normaliser's key
// sum is not part of the combined state).
template <write_rule_policy Rule, read_policy Read = read::identity, backend::backend_tag Backend = backend::cpu, class T,
          class S>
void context_parallel(const arguments<T, S>& a, cp::transport& t, index_t piece = 0) {
  static_assert(std::is_same_v<Read, read::identity>,
                "linea::context_parallel: the identity read only (CCQ statistics are not combined across ranks yet)");
  // Every rank's checks first, then cp::agree: a rank that refused its arguments, or shards whose sizes differ, stop
  // every rank with an error instead of leaving the others in an exchange.
  problem p{};
  std::exception_ptr refused;
  try {
    p = validate_chunkwise<Rule, Read>(a);
    if (a.normalize) throw error("argument 'normalize' is not supported by context_parallel");
    if (!a.checkpoints.empty()) throw error("argument 'checkpoints' is not produced by context_parallel");
    if (piece < 0) throw error("argument 'piece' of context_parallel = " + std::to_string(piece) + " must be >= 0");
    cpu_backend::thread_count(a.threads, 1);  // (the host backends' own check, else run in pass A or C: mid-exchange)
    cp::expect_rank_roles(a, t);
  } catch (...) {
    refused = std::current_exception();
  }
  cp::agree<Rule, S>(t, refused ? nullptr : &p);
  if (refused) std::rethrow_exception(refused);
  segments::host_ops<Backend> ops(a.threads, piece);
  cp::forward<Rule>(ops, a, p, t);
}

}  // namespace linea
