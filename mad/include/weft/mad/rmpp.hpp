// weft/mad/rmpp.hpp — RMPP (IBTA 13.6) for answers larger than one MAD. On a real
// HCA the kernel segments an RMPP-active send (the SA agent registers with RMPP
// version 1, as OpenSM's does); the in-process simulator has no kernel, so it
// segments here, the way the Linux MAD layer does, and tests reassemble as a
// client's kernel would.
//
//   auto segs = weft::mad::rmpp_segments(answer, /*header bytes*/ 56);  // each 256 bytes
//   auto whole = weft::mad::rmpp_reassemble(segs, 56);                 // == answer
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "weft/mad/mad.hpp"
#include "weft/result.hpp"

namespace weft::mad {

constexpr uint8_t kRmppTypeData = 1, kRmppTypeAck = 2, kRmppTypeStop = 3, kRmppTypeAbort = 4;
constexpr uint8_t kRmppFlagActive = 1, kRmppFlagFirst = 2, kRmppFlagLast = 4;
constexpr size_t kRmppHeaderEnd = 36;  // MAD header (24) + RMPP header (12)

// Whether a message's RMPP header marks it active (RMPPFlags, byte 26, bit 0).
inline bool rmpp_active(std::span<const uint8_t> mad) {
  return mad.size() > 26 && (mad[26] & 1);
}

// Splits a message (the class header of `hdr` bytes, then data) into 256-byte DATA
// segments: each repeats the header, carries 256 - hdr data bytes, and is numbered
// from 1; PayloadLength is set on the first (all segments' payload) and on the last
// (its own), as the Linux MAD layer sets them.
std::vector<MadBuf> rmpp_segments(std::span<const uint8_t> msg, size_t hdr);

// The message back from its DATA segments (any order); fails on a missing, repeated
// or inconsistent segment.
Result<std::vector<uint8_t>> rmpp_reassemble(const std::vector<MadBuf>& segs, size_t hdr);

}  // namespace weft::mad
