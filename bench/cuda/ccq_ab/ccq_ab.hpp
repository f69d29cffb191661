// bench/cuda/ccq_ab/ccq_ab.hpp — what the A/B driver's two sides share: plain structs, no linea type. side.cu is
// compiled twice, once over main's headers and once over the branch's, each with -Dlinea=linea_<side> (so the two
// copies of every template get names of their own) and -DAB_SIDE=<side>; main.cu links both and calls each.
#pragma once
#include <cstdint>

struct ab_case {
  const char* name;
  int rule;  // 0 additive (linear_attn), 1 gated_delta, 2 gla, 3 kda
  int read;  // 0 identity, 1 CCQ uniform, 2 CCQ decayed
  long B, T, H, HV, K, V;
  const std::int64_t* cu = nullptr;  // packed sequences (B = 1), host
  long ncu = 0;
  bool l2 = false, explicit_log_decay = false, initial_stats = false, q_tilde = false, extreme = false;
  long offset = 0;  // elements added to the q and k pointers (1: rows not 16-byte aligned)
};

// Device buffers, 16-bit inputs as raw bits, sized for the largest case.
struct ab_buffers {
  void *q, *k, *v, *g, *gx, *gk, *gkx, *beta, *lam, *logd, *o, *qt;
  float *state, *C, *m, *z, *C0, *m0, *z0;
};

#define AB_CAT2(a, b) a##_##b
#define AB_CAT(a, b) AB_CAT2(a, b)
void ccq_ab_call_mainc(const ab_case&, const ab_buffers&, void* stream);  // main with the chunks-fastest grid
void ccq_ab_call_main(const ab_case&, const ab_buffers&, void* stream);
void ccq_ab_call_new(const ab_case&, const ab_buffers&, void* stream);
void ccq_ab_call_newc(const ab_case&, const ab_buffers&, void* stream);  // the branch with the chunks-fastest grid
