// linea/core/seqlens.hpp — cu_seqlens as PyTorch gives it: a host span of int32 or int64 offsets.
//
//   a.cu_seqlens = std::span<const std::int32_t>(offsets);   // or int64, or a std::vector of either
//
// Entries read as int64 whatever the stored width (operator[], front, back); as_int64 / as_int32 give the span
// itself when its width is known, and to_int64 a widened copy (e.g. for a device upload).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace linea {

class cu_seqlens_span {
 public:
  cu_seqlens_span() = default;
  cu_seqlens_span(std::span<const std::int64_t> s) : p64_(s.data()), n_(s.size()) {}
  cu_seqlens_span(std::span<const std::int32_t> s) : p32_(s.data()), n_(s.size()) {}
  // Any contiguous range of int32 or int64 (std::vector, std::array, std::span of non-const).
  template <class R>
    requires(std::is_convertible_v<R&&, std::span<const std::int64_t>> &&
             !std::is_same_v<std::remove_cvref_t<R>, std::span<const std::int64_t>>)
  cu_seqlens_span(R&& r) : cu_seqlens_span(std::span<const std::int64_t>(r)) {}
  template <class R>
    requires(std::is_convertible_v<R&&, std::span<const std::int32_t>> &&
             !std::is_same_v<std::remove_cvref_t<R>, std::span<const std::int32_t>>)
  cu_seqlens_span(R&& r) : cu_seqlens_span(std::span<const std::int32_t>(r)) {}

  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  bool is_int32() const { return p32_ != nullptr; }
  std::int64_t operator[](std::size_t i) const { return p32_ ? std::int64_t(p32_[i]) : p64_[i]; }
  std::int64_t front() const { return (*this)[0]; }
  std::int64_t back() const { return (*this)[n_ - 1]; }

  // The stored span (empty when the other width is stored).
  std::span<const std::int64_t> as_int64() const { return p64_ ? std::span(p64_, n_) : std::span<const std::int64_t>(); }
  std::span<const std::int32_t> as_int32() const { return p32_ ? std::span(p32_, n_) : std::span<const std::int32_t>(); }
  std::vector<std::int64_t> to_int64() const {
    std::vector<std::int64_t> out(n_);
    for (std::size_t i = 0; i < n_; ++i) out[i] = (*this)[i];
    return out;
  }
  // The first entry's address and the entries' size (validate's alignment check).
  const void* data() const { return p32_ ? static_cast<const void*>(p32_) : static_cast<const void*>(p64_); }
  std::size_t entry_bytes() const { return p32_ ? sizeof(std::int32_t) : sizeof(std::int64_t); }
  // The bytes it occupies (the aliasing check, core/aliasing.hpp).
  std::span<const std::byte> bytes() const {
    if (p32_) return std::as_bytes(std::span(p32_, n_));
    if (p64_) return std::as_bytes(std::span(p64_, n_));
    return {};
  }

 private:
  const std::int64_t* p64_ = nullptr;
  const std::int32_t* p32_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace linea
