// FNV-1a, 64 bits (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/): a digest of a
// sequence of bytes and strings, for telling files apart, not for security. Every byte changes the
// state through a bijection, so a single changed byte always changes the result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

namespace qkv::io {

class Fnv1a {
 public:
  void add(std::span<const std::byte> bytes) {
    for (std::byte b : bytes) hash_ = (hash_ ^ static_cast<uint64_t>(b)) * 1099511628211ULL;
  }
  void add(std::string_view s) {  // the string and a terminating 0, so "ab"+"c" differs from "a"+"bc"
    add(std::as_bytes(std::span(s.data(), s.size())));
    add(std::as_bytes(std::span("", 1)));
  }
  // 16 lowercase hex digits.
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash_));
    return buf;
  }

 private:
  uint64_t hash_ = 14695981039346656037ULL;
};

}  // namespace qkv::io
