// bench/cuda/ccq_ab/same_grid.cu — for a call that builds only the two sides main and new (over main's headers and
// the branch's): "mainc" and "newc" (ccq9's grid-order variants) are main and new again, so that main.cu links;
// their columns in `time` then repeat main's and new's (a second interleaved measurement, not another grid).
#include "ccq_ab.hpp"

void ccq_ab_call_mainc(const ab_case& c, const ab_buffers& x, void* s) { ccq_ab_call_main(c, x, s); }
void ccq_ab_call_newc(const ab_case& c, const ab_buffers& x, void* s) { ccq_ab_call_new(c, x, s); }
