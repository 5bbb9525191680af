// weft/types.hpp — strong types used at module edges: a Guid is not a Lid is
// not a port number.
//
//   weft::Lid lid{12};
//   if (!lid.is_unicast()) ...
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace weft {

struct Guid {
  uint64_t value = 0;
  constexpr auto operator<=>(const Guid&) const = default;
  std::string str() const;  // 0x0002c90300001001
};

struct Lid {
  uint16_t value = 0;
  static constexpr uint16_t kMaxUnicast = 0xBFFF;
  static constexpr uint16_t kPermissive = 0xFFFF;
  constexpr bool is_unicast() const { return value >= 1 && value <= kMaxUnicast; }
  constexpr auto operator<=>(const Lid&) const = default;
};

// Port numbers are 0..254 on a switch (0 = management port), 1..254 on a CA.
using PortNum = uint8_t;
constexpr PortNum kDropPort = 0xFF;  // LFT entry meaning "no route"
constexpr int kMaxDrHops = 63;       // IBTA: directed-route paths hold 64 bytes, hop 0 unused

std::string hex_guid(uint64_t v);

inline std::string hex_guid(uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x0000000000000000";
  for (int i = 17; i >= 2; --i, v >>= 4) s[i] = digits[v & 0xF];
  return s;
}
inline std::string Guid::str() const {
  return hex_guid(value);
}

}  // namespace weft

template <>
struct std::hash<weft::Guid> {
  size_t operator()(const weft::Guid& g) const noexcept { return std::hash<uint64_t>{}(g.value); }
};
