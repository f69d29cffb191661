// tests/backend/cuda/fuzz/cuda_fuzz.cu — the CUDA fuzz driver: random, reproducible cases over every rule × read
// (identity, CCQ uniform / decayed) × form (recurrent, chunkwise, decode step, backward) × input type (float32,
// bf16, fp16), each judged against the float64 reference by cuda_fuzz_case.hpp's contract.
//
// Device-only: not part of the CMake build or CI (tests/backend/cuda/CMakeLists.txt globs that folder's *.cu, not
// this subfolder). Build and run with run_fuzz.sh beside it; one process:
//
//   cuda_fuzz [--seed S] [--from I] [--to J] [--shard R/P] [--budget SECONDS] [--case-timeout SECONDS]
//             [--max-work W] [--form NAME] [--read PREFIX] [--list]
//
// runs cases I <= i < J with i % P == R (and B·T·HV·K·V <= W: small cases for compute-sanitizer; --form backward
// --read ccq: only the cases of that form and of a read whose name starts so, e.g. the CCQ backward's) (the seed and index name a case: the same pair is the same case), prints a
// `BEGIN i` line before each case and a `RESULT` line after it:
//   RESULT i PASS|REJECT|ILLCOND|FAIL rule form dtype read worst=<error/tolerance> | <case> | <detail>
// ILLCOND: a tensor over its bound by as much as the case's inputs make the documented arithmetic lose there, by
// the stated estimate (cuda_fuzz_case.hpp, judge_conditioning; docs/usage.md, "Accuracy notes"), printed in <detail>.
// A case past --case-timeout prints a FAIL (hang) and exits 3; a CUDA error that poisons the context prints a FAIL
// and exits 2: run_fuzz.sh goes on from the next case in a fresh process.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <unistd.h>

#include "backend/cuda/fuzz/cuda_fuzz_case.hpp"

using namespace linea;
using namespace linea::cuda_fuzz;

namespace {

using clock_type = std::chrono::steady_clock;
std::atomic<long> current_case{-1};
std::atomic<long long> case_started_ms{0};

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now().time_since_epoch()).count();
}

template <class Rule, class Read, class T>
verdict run_typed(const plan& p) {
  if (p.form == form_kind::backward) {
    // the backward instances linea compiles: identity float32 / bf16, CCQ float32 (make_plan draws only those)
    if constexpr ((Read::is_identity && !std::is_same_v<T, fp16>) || std::is_same_v<T, float>) return run_backward<Rule, Read, T>(p);
    else return verdict{.failure = "internal: no backward instance for this type"};
  } else {
    if constexpr (Read::is_identity || !std::is_same_v<T, fp16>) return run_forward<Rule, Read, T>(p);
    else return verdict{.failure = "internal: no CCQ fp16 instance"};
  }
}

template <class Rule>
verdict run_rule(const plan& p) {
  auto by_type = [&]<class Read>() {
    switch (p.type) {
      case dtype::f32: return run_typed<Rule, Read, float>(p);
      case dtype::bf16: return run_typed<Rule, Read, bf16>(p);
      default: return run_typed<Rule, Read, fp16>(p);
    }
  };
  switch (p.read) {
    case read_kind::identity: return by_type.template operator()<read::identity>();
    case read_kind::uniform: return by_type.template operator()<read::ccq<read::uniform>>();
    default: return by_type.template operator()<read::ccq<read::decayed>>();
  }
}

verdict run_plan(const plan& p) {
  verdict v;
  int r = 0;
  all_rules::for_each([&]<class Rule>() {
    if (r++ == p.rule) v = run_rule<Rule>(p);
  });
  return v;
}

std::string one_line(std::string s) {
  for (auto& ch : s)
    if (ch == '\n' || ch == '|') ch = ' ';
  return s.size() > 400 ? s.substr(0, 400) + "..." : s;
}

void print_result(const plan& p, const char* status, double worst, const std::string& detail) {
  std::printf("RESULT %ld %s %s %s %s %s worst=%.3g | %s | %s\n", p.index, status, rule_names[p.rule], name_of(p.form),
              name_of(p.type), name_of(p.read), worst, p.describe().c_str(), one_line(detail).c_str());
  std::fflush(stdout);
}

long arg_long(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return std::strtol(argv[i + 1], nullptr, 10);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const long seed = arg_long(argc, argv, "--seed", 1), from = arg_long(argc, argv, "--from", 0);
  const long to = arg_long(argc, argv, "--to", 400), budget = arg_long(argc, argv, "--budget", 1000000);
  const long timeout_s = arg_long(argc, argv, "--case-timeout", 30);
  const double max_work = double(arg_long(argc, argv, "--max-work", -1));
  auto small = [&](const plan& p) {
    if (max_work < 0) return true;
    index_t T = p.shape.B * p.shape.T;
    if (!p.shape.seqlens.empty()) T = std::accumulate(p.shape.seqlens.begin(), p.shape.seqlens.end(), index_t(0));
    return double(T) * double(p.shape.HV) * double(p.shape.K) * double(p.shape.V) <= max_work;
  };
  long shard = 0, shards = 1;
  bool list = false;
  const char *form = nullptr, *read = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--shard") && i + 1 < argc) std::sscanf(argv[i + 1], "%ld/%ld", &shard, &shards);
    if (!std::strcmp(argv[i], "--list")) list = true;
    if (!std::strcmp(argv[i], "--form") && i + 1 < argc) form = argv[i + 1];
    if (!std::strcmp(argv[i], "--read") && i + 1 < argc) read = argv[i + 1];
  }
  const auto chosen = [&](const plan& p) {
    return small(p) && (!form || !std::strcmp(form, name_of(p.form))) &&
           (!read || !std::strncmp(read, name_of(p.read), std::strlen(read)));
  };
  if (list) {
    for (long i = from; i < to; ++i)
      if (i % shards == shard && chosen(make_plan(seed, i))) std::printf("%ld %s\n", i, make_plan(seed, i).describe().c_str());
    return 0;
  }
  const long long start = now_ms();
  std::thread([timeout_s, seed] {  // the watchdog: a case past its time is a hang
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const long c = current_case.load();
      if (c >= 0 && now_ms() - case_started_ms.load() > timeout_s * 1000) {
        print_result(make_plan(seed, c), "FAIL", 0, "HANG: still running after " + std::to_string(timeout_s) + " s");
        std::_Exit(3);
      }
    }
  }).detach();

  for (long i = from; i < to; ++i) {
    if (i % shards != shard) continue;
    if (now_ms() - start > budget * 1000) {
      std::printf("BUDGET stopped before case %ld\n", i);
      break;
    }
    const plan p = make_plan(seed, i);
    if (!chosen(p)) continue;
    std::printf("BEGIN %ld\n", i);
    std::fflush(stdout);
    case_started_ms = now_ms();
    current_case = i;
    verdict v;
    try {
      v = run_plan(p);
    } catch (const std::exception& e) {
      v.failure = std::string("harness exception: ") + e.what();
    }
    current_case = -1;
    const std::string ms = " (" + std::to_string(now_ms() - case_started_ms.load()) + " ms)";
    if (!v.failure.empty()) print_result(p, "FAIL", v.worst, v.failure + ms);
    else if (!v.ill_conditioned.empty()) print_result(p, "ILLCOND", v.worst, v.ill_conditioned + ms);
    else if (!v.rejection.empty()) print_result(p, "REJECT", 0, v.rejection + ms);
    else print_result(p, "PASS", v.worst, ms);
    if (v.sticky) return 2;
  }
  std::printf("DONE seed %ld shard %ld/%ld\n", seed, shard, shards);
  return 0;
}
