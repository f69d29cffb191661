// linea_conformance — runs conformance cases through every form of the library and compares with their
// float64 truths.
//
//   linea_conformance [--read POLICY] [--form NAME] DIR...
//
// Every directory under each DIR that holds a manifest.json is one case (format:
// ../shared/conformance/README.md). Each case runs through each form (tools/conformance/forms.hpp) with
// the read policy and options its params name; the outputs o, ht (and the write residual u where the case
// has u_ref64) must be within SPEC §5 of the *_ref64 truths for the stored input type. A gradient case (*_grad)
// also runs the float64 reference backward with float64 and with float32 inputs ("backward/float64",
// "backward/float32"): every d<x>_ref64 it holds must be within SPEC §6. One line per case and form, then the
// line "N passed, M failed"; the exit status is non-zero if any failed.
// A case needing a feature this build lacks fails; it is not skipped.
//
//   --read POLICY   run only the cases whose params.read is POLICY (identity, ccq)
//   --form NAME     run only the forms whose name starts with NAME (recurrent, step, ...)
#include <cstdio>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "conformance/backward_case.hpp"
#include "conformance/backward_forms.hpp"
#include "conformance/case_arguments.hpp"
#include "conformance/forms.hpp"
#include "conformance/manifest.hpp"
#include "conformance/reads.hpp"
#include "support/tolerance.hpp"

namespace {

using namespace linea;
using namespace linea::conformance;

struct options {
  std::vector<fs::path> dirs;
  std::string read_filter, form_filter;
};

struct tally {
  int passed = 0, failed = 0, not_applicable = 0, skipped = 0, filtered_cases = 0, gradient_cases = 0;
};

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: linea_conformance [--read POLICY] [--form NAME] DIR...\n"
               "  runs every case (a directory with manifest.json) under each DIR through every form of linea\n"
               "  --read POLICY  only cases whose params.read is POLICY (identity or ccq)\n"
               "  --form NAME    only forms whose name starts with NAME (recurrent, step, chunkwise, backward, ...)\n");
}

std::string format_checks(const std::vector<check>& checks, double bound) {
  std::string s;
  char buf[64];
  for (const auto& c : checks) {
    std::snprintf(buf, sizeof buf, "%s %.2e  ", c.name.c_str(), c.error);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "(bound %.0e)", bound);
  return s + buf;
}

// One line for case `c` under `name`: PASS when it ran (no reason) and every check is within the bound, and
// counts it.
void report(const conformance_case& c, const std::string& name, const std::vector<check>& checks, double bound,
            const std::string& reason, tally& t) {
  bool ok = reason.empty() && !checks.empty();
  for (const auto& ch : checks) ok = ok && ch.error <= bound;  // NaN fails
  std::printf("%s  %-40s %-16s %s\n", ok ? "PASS" : "FAIL", c.label().c_str(), name.c_str(),
              reason.empty() ? format_checks(checks, bound).c_str() : reason.c_str());
  ++(ok ? t.passed : t.failed);
}

// Runs case `c` through one form and prints its line.
template <class Form>
void run_form(const Form& form, const conformance_case& c, tally& t) {
  const std::string name = form.name();
  if (const std::string why = form.not_applicable(c); !why.empty()) {
    std::printf("n/a   %-40s %-16s %s\n", c.label().c_str(), name.c_str(), why.c_str());
    ++t.not_applicable;
    return;
  }
  std::vector<check> checks;
  double bound = 0;
  std::string reason;
  try {
    with_input_type(c, [&]<class T>() {
      with_rule(c.op(), [&]<class Rule>() {
        with_read(c, [&]<class Read>() {
          case_inputs<T> in(c, std::type_identity<Rule>{});
          case_outputs<T> out(c, in);
          form.template run<Rule, Read>(in, out);
          checks = out.compare(c);
          bound = testing::tolerance_for<T>(in.longest);  // SPEC §5 for the stored input type
        });
      });
    });
  } catch (const std::exception& e) {
    reason = e.what();
  }
  report(c, name, checks, bound, reason, t);
}

// The gradient truths of case `c` from one backward form (backward_forms.hpp), with inputs of its input type; one
// line. A rule / read the form's backend does not compile, or an option it rejects, is a SKIP line (not counted
// as passed or failed).
template <class Form>
void run_backward(const Form& form, const conformance_case& c, tally& t) {
  using T = typename Form::input_type;
  const std::string name = form.name();
  const double bound = testing::gradient_tolerance_for<T>();  // SPEC §6 for the input type
  std::vector<check> checks;
  std::string reason, skip;
  try {
    skip = form.skip(c);
    if (skip.empty())
      with_rule(c.op(), [&]<class Rule>() {
        with_read(c, [&]<class Read>() {
          if constexpr (!Form::template takes<Rule, Read>) {
            skip = Form::template cannot_take<Rule, Read>();  // never instantiates the backward that static_asserts
          } else {
            case_inputs<T> in(c, std::type_identity<Rule>{});
            case_gradients<T> grads(c, in);
            form.template run<Rule, Read>(in, grads);
            checks = grads.compare(c);
          }
        });
      });
  } catch (const std::exception& e) {
    reason = e.what();
  }
  if (!skip.empty() && reason.empty()) {
    std::printf("SKIP  %-40s %-16s (%s)\n", c.label().c_str(), name.c_str(), skip.c_str());
    ++t.skipped;
    return;
  }
  report(c, name, checks, bound, reason, t);
}

void run_case(const fs::path& dir, const std::string& label, const options& opt, tally& t) {
  conformance_case c;
  try {
    c = conformance_case::load(dir, label);
  } catch (const std::exception& e) {
    std::printf("FAIL  %-40s %-16s %s\n", label.c_str(), "load", e.what());
    ++t.failed;
    return;
  }
  if (!opt.read_filter.empty() && c.read_policy() != opt.read_filter) {
    ++t.filtered_cases;
    return;
  }
  std::apply([&](const auto&... form) {
    ((opt.form_filter.empty() || form.name().starts_with(opt.form_filter) ? run_form(form, c, t) : void()), ...);
  }, all_forms());

  // Gradient cases: every gradient truth through every backward form (SPEC §6 bound for the form's input type).
  if (!c.gradient_truths().empty()) {
    ++t.gradient_cases;
    std::apply([&](const auto&... form) {
      ((opt.form_filter.empty() || form.name().starts_with(opt.form_filter) ? run_backward(form, c, t) : void()), ...);
    }, all_backward_forms());
  }
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return 0;
    } else if ((arg == "--read" || arg == "--form") && i + 1 < argc) {
      (arg == "--read" ? opt.read_filter : opt.form_filter) = argv[++i];
    } else if (arg.starts_with("-")) {
      usage(stderr);
      return 2;
    } else {
      opt.dirs.emplace_back(arg);
    }
  }
  if (opt.dirs.empty()) {
    usage(stderr);
    return 2;
  }

  tally t;
  for (const fs::path& root : opt.dirs) {
    // Cases are labelled by their path below DIR's parent: "fla/kda/t63".
    const fs::path base = fs::weakly_canonical(root);
    std::vector<fs::path> cases;
    if (fs::is_directory(base)) cases = find_cases(base);
    if (cases.empty()) {
      std::printf("FAIL  %-40s %-16s no manifest.json found under this directory\n", root.string().c_str(), "-");
      ++t.failed;
      continue;
    }
    for (const fs::path& dir : cases)
      run_case(dir, fs::relative(dir, base.parent_path()).generic_string(), opt, t);
  }

  if (t.not_applicable) std::printf("%d form/case pairs not applicable (reason on their n/a line)\n", t.not_applicable);
  if (t.gradient_cases) {
    std::string names;
    std::apply([&](const auto&... form) { ((names += (names.empty() ? "" : ", ") + form.name()), ...); },
               all_backward_forms());
    std::printf("%d gradient cases: gradients checked by %s\n", t.gradient_cases, names.c_str());
  }
  if (t.skipped) std::printf("%d backward/case pairs skipped (reason on their SKIP line)\n", t.skipped);
  std::string filters;
  if (!opt.read_filter.empty()) filters += "read=" + opt.read_filter;
  if (!opt.form_filter.empty()) filters += (filters.empty() ? "" : ", ") + ("form=" + opt.form_filter);
  if (!filters.empty() && t.filtered_cases)
    std::printf("%d cases left out by the filter\n", t.filtered_cases);
  std::printf("%d passed, %d failed%s\n", t.passed, t.failed, filters.empty() ? "" : (" (filtered: " + filters + ")").c_str());
  return t.failed ? 1 : 0;
}
