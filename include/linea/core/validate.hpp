// linea/core/validate.hpp — every check on the arguments, done before anything is written.
//
// validate<Rule, Read>(args) returns the problem sizes or throws linea::error naming the bad argument and
// the shapes involved. The forms call it first; a backend adds only its own checks (device pointers).
#pragma once
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "../rules/write_rule.hpp"
#include "aliasing.hpp"
#include "argument_views.hpp"
#include "arguments.hpp"
#include "error.hpp"

namespace linea {

namespace detail {

inline std::string dims(std::initializer_list<index_t> d) {
  std::string s = "[";
  bool first = true;
  for (index_t x : d) {
    s += (first ? "" : ", ") + std::to_string(x);
    first = false;
  }
  return s + "]";
}

template <class V>
bool has_extents(const V& v, std::initializer_list<index_t> want) {
  int r = 0;
  for (index_t x : want) {
    if (v.extent(r++) != x) return false;
  }
  return true;
}

// Throws "argument 'name' has shape [..]; expected <what> = [..]".
template <class V>
void expect_shape(const V& v, const char* name, const char* what, std::initializer_list<index_t> want) {
  if (!has_extents(v, want))
    throw error(std::string("argument '") + name + "' has shape " + shape_string(v) + "; expected " + what +
                " = " + dims(want));
}

template <class V>
void expect_given(const V& v, const char* name, const std::string& why) {
  if (v.empty()) throw error(std::string("argument '") + name + "' is missing: " + why);
}

template <class V>
void expect_absent(const V& v, const char* name, const std::string& why) {
  if (!v.empty())
    throw error(std::string("argument '") + name + "' (shape " + shape_string(v) + ") must not be given: " + why);
}

// A given view with elements needs data: a null pointer is only allowed where there is nothing to read or
// write (a shape with a zero extent, T = 0) or for the default view ("not given").
// A view with elements must also lie inside the address space: extents and strides whose elements would reach
// below address 0 or past its end (strides of 2^61 elements, say) cannot describe memory, and the byte ranges of
// the aliasing checks (core/aliasing.hpp) and every kernel's offsets would wrap around.
template <class V>
void expect_data(const V& v, const char* name) {
  for (int r = 0; r < V::rank; ++r)
    if (v.extent(r) <= 0) return;  // no elements (or a negative extent, refused by the shape checks)
  if (v.ptr == nullptr) {
    if (v.empty()) return;
    throw error(std::string("argument '") + name + "' has shape " + shape_string(v) + " but a null data pointer");
  }
  // Every backend reads and writes the elements in place through typed pointers: a pointer that is not a multiple
  // of the element's alignment is undefined behaviour on the CPU and a misaligned-address fault on the GPU (which
  // ends the CUDA context). numpy can make such arrays (a view at a byte offset, a packed structured field).
  constexpr auto element_align = static_cast<std::uintptr_t>(alignof(typename V::element_type));
  if (reinterpret_cast<std::uintptr_t>(v.ptr) % element_align != 0)
    throw error(std::string("argument '") + name + "' (shape " + shape_string(v) + ") starts at address " +
                std::to_string(reinterpret_cast<std::uintptr_t>(v.ptr)) + ", not a multiple of its elements' " +
                std::to_string(element_align) + "-byte alignment: pass an aligned copy");
  // The lowest and highest element's byte offsets from ptr (core/view.hpp's element offsets, times the element
  // size), without overflow.
  constexpr index_t size = static_cast<index_t>(sizeof(typename V::element_type));
  index_t low = 0, high = 0;
  bool wraps = !element_reach(v, low, high) || __builtin_mul_overflow(low, size, &low) ||
               __builtin_mul_overflow(high, size, &high);
  const auto base = reinterpret_cast<std::uintptr_t>(v.ptr);
  std::uintptr_t end = 0;
  if (low < 0) wraps |= static_cast<std::uintptr_t>(-(low + 1)) >= base;  // base + low < 0 (no overflow at low's minimum)
  wraps |= __builtin_add_overflow(base, static_cast<std::uintptr_t>(high), &end) ||
           __builtin_add_overflow(end, static_cast<std::uintptr_t>(size), &end);
  if (wraps)
    throw error(std::string("argument '") + name + "' has shape " + shape_string(v) + " and strides " +
                extents_string<V::rank>(v.str) + " (elements) at address " + std::to_string(base) +
                ": its elements would reach outside the address space");
}

// The same for an index array (cu_seqlens, state_indices; on the host or the device): its int32 / int64 entries
// are read through typed pointers too.
inline void expect_aligned_indices(const void* data, std::size_t entries, std::size_t entry_bytes, const char* name) {
  if (entries == 0 || data == nullptr) return;
  const auto address = reinterpret_cast<std::uintptr_t>(data);
  if (address % entry_bytes != 0)
    throw error(std::string("argument '") + name + "' (" + std::to_string(entries) + " entries of int" +
                std::to_string(8 * entry_bytes) + ") starts at address " + std::to_string(address) +
                ", not a multiple of its entries' " + std::to_string(entry_bytes) +
                "-byte alignment: pass an aligned copy");
}

template <class T, class S>
void expect_data_everywhere(const arguments<T, S>& a) {
  for_each_input(a, [](const auto& x, const char* name) { expect_data(x, name); });
  for_each_output(a, [](const auto& x, const char* name, const char*) { expect_data(x, name); });
}

template <class V>
void expect_nonnegative_extents(const V& v, const char* name) {
  for (int r = 0; r < V::rank; ++r)
    if (v.extent(r) < 0) throw error(std::string("argument '") + name + "' has a negative extent: " + shape_string(v));
}

// Aliasing (core/aliasing.hpp, docs/usage.md): no output shares memory with an input or another output, except
// exactly in place (o == v, final_state == initial_state and the CCQ statistics over their initial values), and
// no output has stride 0 over an extent > 1.
template <class T, class S>
void expect_no_aliasing(const arguments<T, S>& a) {
  for_each_output(a, [&](const auto& out, const char* name, std::string_view in_place_of) {
    const auto against = [&](const auto& x, const char* x_name) {
      expect_disjoint(out, name, x, x_name, x_name == in_place_of);
    };
    for_each_input(a, against);
    for_each_index_span(a, against);
    expect_distinct_elements(out, name);  // each output whole: one element per position
  });
  // outputs pairwise
  for_each_pair([&](auto f) { for_each_output(a, f); },
                [](const auto& x, const char* x_name, const auto& y, const char* y_name) {
                  expect_disjoint(x, x_name, y, y_name);
                });
}

// linea counts elements, items and scratch in index_t (64-bit signed). Sizes whose products do not fit describe
// no memory a call could be given (a stride-0 axis can make a view of 2^62 elements out of one), and the products
// would wrap around in the checks after this one and in every backend's scratch sizes; they are refused here.
// The products checked bound the others: the states N·HV·K·V, the read's statistics N·HV·K·K, a token's rows
// B·T·HV·(K + V), the backend's item counts N·HV.
inline void expect_countable(const problem& p) {
  const auto product = [](std::initializer_list<index_t> f, index_t& out) {
    out = 1;
    for (const index_t x : f)
      if (__builtin_mul_overflow(out, x, &out)) return false;
    return true;
  };
  index_t n = 0, kv = 0;  // (each product also without its leading count, which may be 0)
  const bool fits = product({p.HV, p.K, p.V}, n) && product({p.N, p.HV, p.K, p.V}, n) &&
                    product({p.HV, p.K, p.K}, n) && product({p.N, p.HV, p.K, p.K}, n) &&
                    !__builtin_add_overflow(p.K, p.V, &kv) && product({p.T, p.HV, kv}, n) &&
                    product({p.B, p.T, p.HV, kv}, n);
  if (!fits)
    throw error("the problem's sizes B = " + std::to_string(p.B) + ", T = " + std::to_string(p.T) +
                ", N = " + std::to_string(p.N) + ", H = " + std::to_string(p.H) + ", HV = " + std::to_string(p.HV) +
                ", K = " + std::to_string(p.K) + ", V = " + std::to_string(p.V) +
                " (from q, v and cu_seqlens) overflow a 64-bit element count (N·HV·K·V, N·HV·K·K or B·T·HV·(K + V))");
}

}  // namespace detail

// Checks shared by every rule and read; `Rule` decides which gates must (and must not) be given.
// `state_rows` overrides N (the first extent of the states): the decode step's state pool.
template <class Rule, class T, class S>
problem validate_write(const arguments<T, S>& a, index_t state_rows = -1) {
  using namespace detail;
  using Decay = typename Rule::decay;
  using Update = typename Rule::update;
  const std::string rule = rule_name<Rule>::value;

  expect_given(a.q, "q", "queries [B, T, H, K] are required");
  expect_given(a.k, "k", "keys [B, T, H, K] are required");
  expect_given(a.v, "v", "values [B, T, HV, V] are required");
  expect_given(a.o, "o", "the output [B, T, HV, V] is required");
  expect_data_everywhere(a);
  expect_aligned_indices(a.cu_seqlens.data(), a.cu_seqlens.size(), a.cu_seqlens.entry_bytes(), "cu_seqlens");
  expect_aligned_indices(a.state_indices.data(), a.state_indices.size(), sizeof(std::int32_t), "state_indices");
  expect_nonnegative_extents(a.q, "q");
  expect_nonnegative_extents(a.v, "v");

  problem p;
  p.B = a.q.extent(0), p.T = a.q.extent(1), p.H = a.q.extent(2), p.K = a.q.extent(3);
  p.HV = a.v.extent(2), p.V = a.v.extent(3);
  if (p.H <= 0 || p.K <= 0)
    throw error("argument 'q' has shape " + shape_string(a.q) + "; H and K must be positive");
  if (p.HV <= 0 || p.V <= 0)
    throw error("argument 'v' has shape " + shape_string(a.v) + "; HV and V must be positive");
  expect_shape(a.k, "k", "[B, T, H, K] as q", {p.B, p.T, p.H, p.K});
  if (a.v.extent(0) != p.B || a.v.extent(1) != p.T)
    throw error("argument 'v' has shape " + shape_string(a.v) + "; expected [B, T, HV, V] with B = " +
                std::to_string(p.B) + ", T = " + std::to_string(p.T) + " as q " + shape_string(a.q));
  if (p.HV % p.H != 0)
    throw error("argument 'v' has shape " + shape_string(a.v) + ": its heads HV = " + std::to_string(p.HV) +
                " are not a multiple of the key heads H = " + std::to_string(p.H) + " of q " + shape_string(a.q));
  p.group = p.HV / p.H;
  expect_shape(a.o, "o", "[B, T, HV, V] as v", {p.B, p.T, p.HV, p.V});

  // Packed sequences.
  if (a.cu_seqlens.empty()) {
    p.N = p.B;
  } else {
    const auto& cu = a.cu_seqlens;
    if (cu.size() < 2)
      throw error("argument 'cu_seqlens' has " + std::to_string(cu.size()) + " entries; it needs N+1 >= 2");
    if (p.B != 1)
      throw error("argument 'cu_seqlens' needs B = 1 (packed sequences), but q has shape " + shape_string(a.q));
    if (cu.front() != 0)
      throw error("argument 'cu_seqlens' must start at 0, but cu_seqlens[0] = " + std::to_string(cu.front()));
    for (std::size_t n = 0; n + 1 < cu.size(); ++n)
      if (cu[n + 1] < cu[n])
        throw error("argument 'cu_seqlens' must not decrease, but cu_seqlens[" + std::to_string(n + 1) +
                    "] = " + std::to_string(cu[n + 1]) + " < cu_seqlens[" + std::to_string(n) +
                    "] = " + std::to_string(cu[n]));
    if (cu.back() != p.T)
      throw error("argument 'cu_seqlens' must end at T = " + std::to_string(p.T) + " (q " + shape_string(a.q) +
                  "), but its last entry is " + std::to_string(cu.back()));
    p.N = static_cast<index_t>(cu.size()) - 1;
  }
  if (state_rows >= 0) p.N = state_rows;
  expect_countable(p);

  // Gates the rule needs, and only those.
  if constexpr (reads(Rule::inputs, input::g)) {
    expect_given(a.g, "g", "rule '" + rule + "' needs a scalar log decay g [B, T, HV]");
    expect_shape(a.g, "g", "[B, T, HV]", {p.B, p.T, p.HV});
  } else {
    expect_absent(a.g, "g", "rule '" + rule + "' takes no scalar gate");
  }
  if constexpr (reads(Rule::inputs, input::gk)) {
    expect_given(a.gk, "gk", "rule '" + rule + "' needs a per-key log decay gk [B, T, HV, K]");
    expect_shape(a.gk, "gk", "[B, T, HV, K]", {p.B, p.T, p.HV, p.K});
  } else {
    expect_absent(a.gk, "gk", "rule '" + rule + "' takes no per-key gate");
  }
  // (an integer cast to the enum, e.g. through a binding, is not an activation: it would act as none)
  if (a.beta_act != beta_activation::none && a.beta_act != beta_activation::sigmoid &&
      a.beta_act != beta_activation::two_sigmoid)
    throw error("argument 'beta_act' is " + std::to_string(static_cast<int>(a.beta_act)) +
                ", not one of beta_activation's values (none, sigmoid, two_sigmoid)");
  if constexpr (reads(Rule::inputs, input::beta)) {
    expect_given(a.beta, "beta", "rule '" + rule + "' needs beta [B, T, HV]");
    expect_shape(a.beta, "beta", "[B, T, HV]", {p.B, p.T, p.HV});
  } else {
    expect_absent(a.beta, "beta", "rule '" + rule + "' takes no beta");
    if (a.beta_act != beta_activation::none)
      throw error("argument 'beta_act' is set, but rule '" + rule + "' takes no beta");
  }
  if constexpr (reads(Rule::inputs, input::b)) {
    expect_given(a.b, "b", "rule '" + rule + "' needs the erase gate b [B, T, HV, K]");
    expect_shape(a.b, "b", "[B, T, HV, K]", {p.B, p.T, p.HV, p.K});
  } else {
    expect_absent(a.b, "b", "rule '" + rule + "' takes no erase gate");
  }
  if constexpr (reads(Rule::inputs, input::w)) {
    expect_given(a.w, "w", "rule '" + rule + "' needs the write gate w [B, T, HV, V]");
    expect_shape(a.w, "w", "[B, T, HV, V]", {p.B, p.T, p.HV, p.V});
  } else {
    expect_absent(a.w, "w", "rule '" + rule + "' takes no write gate");
  }

  // In-kernel gate activation.
  if (a.gate.active()) {
    if constexpr (!reads(Rule::inputs, input::g | input::gk)) {
      throw error("argument 'gate.A_log' is given, but rule '" + rule + "' has no decay gate");
    } else {
      expect_shape(a.gate.A_log, "gate.A_log", "[HV]", {p.HV});
      if (!a.gate.dt_bias.empty()) {
        if constexpr (reads(Rule::inputs, input::gk))
          expect_shape(a.gate.dt_bias, "gate.dt_bias", "[HV*K] for a per-key gate", {p.HV * p.K});
        else
          expect_shape(a.gate.dt_bias, "gate.dt_bias", "[HV] for a scalar gate", {p.HV});
      }
      // Like scale: a non-finite parameter would make every gate (and so every output) NaN.
      if (a.gate.lower_bound && !std::isfinite(*a.gate.lower_bound))
        throw error("argument 'gate.lower_bound' = " + number_string(*a.gate.lower_bound) + " is not finite");
      // It is the most negative log decay the gate can give (fla's KDA uses −5): a positive bound would make
      // every gate a growth factor exp(g) > 1, and the state blow up instead of decaying.
      if (a.gate.lower_bound && *a.gate.lower_bound > 0.f)
        throw error("argument 'gate.lower_bound' = " + number_string(*a.gate.lower_bound) +
                    " is positive; it is the lowest log decay lower_bound·σ(·) can reach and must be <= 0 (fla uses -5)");
    }
  } else {
    expect_absent(a.gate.dt_bias, "gate.dt_bias", "it needs gate.A_log");
    if (a.gate.lower_bound) throw error("argument 'gate.lower_bound' is set, but gate.A_log is not given");
  }
  if (a.normalize && !(std::is_same_v<Update, update::additive> && std::is_same_v<Decay, decay::none>))
    throw error("argument 'normalize' is only defined for the additive rule (linear_attn), not '" + rule + "'");

  // States.
  if (!a.initial_state.empty())
    expect_shape(a.initial_state, "initial_state", "[N, HV, K, V]", {p.N, p.HV, p.K, p.V});
  if (!a.final_state.empty())
    expect_shape(a.final_state, "final_state", "[N, HV, K, V]", {p.N, p.HV, p.K, p.V});
  if (!a.residual.empty()) expect_shape(a.residual, "residual", "[B, T, HV, V] as v", {p.B, p.T, p.HV, p.V});

  // Options.
  if (a.chunk_size <= 0) throw error("argument 'chunk_size' = " + std::to_string(a.chunk_size) + " must be positive");
  p.scale = a.scale ? *a.scale : 1.0 / std::sqrt(static_cast<double>(p.K));
  if (!std::isfinite(p.scale)) throw error("argument 'scale' is not finite");
  // The kernels compute in the state type S: a scale past its range would be ±inf there, and every o NaN or ±inf.
  if (!std::isfinite(static_cast<S>(p.scale)))
    throw error("argument 'scale' = " + number_string(p.scale) + " is not finite in the compute type (" +
                (sizeof(S) == 4 ? "float32" : "float64") + ")");
  return p;
}

// The write rule's checks, then the read policy's: every shape and option, but not aliasing.
template <class Rule, class Read, class T, class S>
problem validate_shapes(const arguments<T, S>& a, index_t state_rows = -1) {
  problem p = validate_write<Rule>(a, state_rows);
  Read::validate(a, p);
  return p;
}

// Full validation for a form: shapes and options, then which views may share memory (core/aliasing.hpp).
template <class Rule, class Read, class T, class S>
problem validate(const arguments<T, S>& a, index_t state_rows = -1) {
  const problem p = validate_shapes<Rule, Read>(a, state_rows);
  detail::expect_no_aliasing(a);
  return p;
}

}  // namespace linea
