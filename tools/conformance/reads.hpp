// tools/conformance/reads.hpp — which read policy a case asks for (params.read), and the rule of its op.
#pragma once
#include <string>

#include <linea/linea.hpp>

#include "manifest.hpp"

namespace linea::conformance {

// Calls f.template operator()<Rule>() with the write rule of fla's op name; throws for an unknown op.
template <class F>
void with_rule(const std::string& op, F&& f) {
  if (all_rules::visit(op, f)) return;  // linea's one list of rules (rules/list.hpp)
  throw case_error("op '" + op + "' is not a write rule of this build");
}

// Calls f.template operator()<Read>() with the read policy the case names; a read this build lacks fails.
template <class F>
void with_read(const conformance_case& c, F&& f) {
  const std::string read = c.read_policy();
  if (read == "identity") return f.template operator()<read::identity>();
  if (read == "ccq") {
    const std::string w = c.given("ccq_weighting") ? c.params()["ccq_weighting"].template get<std::string>() : "uniform";
    if (w == "uniform") return f.template operator()<read::ccq<read::uniform>>();
    if (w == "decayed") return f.template operator()<read::ccq<read::decayed>>();
    throw case_error("ccq_weighting '" + w + "' is not a CCQ weighting of this build (uniform, decayed)");
  }
  throw case_error("read '" + read + "' is not a read policy of this build");
}

// Calls f.template operator()<T>() with the input type of the stored q (float32 → float, float64 → double).
template <class F>
void with_input_type(const conformance_case& c, F&& f) {
  const std::string dtype = c.file("q").dtype;
  if (dtype == "float32") return f.template operator()<float>();
  if (dtype == "float64") return f.template operator()<double>();
  throw case_error("inputs of dtype '" + dtype + "' are not supported by the runner");
}

}  // namespace linea::conformance
