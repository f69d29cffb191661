// linea/core/empty_call.hpp — calls without tokens: when they write nothing, the forms stop after validation.
//
// With T = 0 (every sequence empty) o, residual, q̃, checkpoints and every per-token gradient have no elements;
// what remains are the per-(sequence, head) states: S_T = S_0 (or 0), CCQ's final statistics = their initial
// ones, and in the backward dL/dS_0 = dL/dS_T, dC0, dm0, dz0, and dA_log, ddt_bias = 0. When none of these is
// asked for, the call writes nothing, and walking its N·HV empty items would only cost time: N is the batch
// extent, which a view without elements may make as large as 2⁶², so that walk took hours.
#pragma once
#include "arguments.hpp"
#include "gradients.hpp"

namespace linea::detail {

template <class T, class S>
bool forward_writes_nothing(const arguments<T, S>& a, const problem& p) {
  return p.T == 0 && a.final_state.empty() && a.ccq.C.empty() && a.ccq.m.empty() && a.ccq.z.empty();
}

// Without tokens, whether the backward writes nothing per sequence; dA_log and ddt_bias (then 0) are the
// caller's to zero where they live (host memory for the CPU backends, device memory for CUDA), in its own code:
// these two predicates are argument checks, shared by every instruction set (backend/isa.hpp).
template <class T, class S>
bool backward_writes_no_state_gradient(const gradients<T, S>& g, const problem& p) {
  return p.T == 0 && g.d_initial_state.empty() && g.dC0.empty() && g.dm0.empty() && g.dz0.empty();
}

}  // namespace linea::detail
