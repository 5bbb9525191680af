#include "weft/mad/rmpp.hpp"

#include <infiniband/mad.h>

#include <algorithm>
#include <map>

namespace weft::mad {

namespace {
uint32_t get(const MadBuf& m, MAD_FIELDS f) {
  return mad_get_field(const_cast<uint8_t*>(m.data()), 0, f);
}
void put(MadBuf& m, MAD_FIELDS f, uint32_t v) {
  mad_set_field(m.data(), 0, f, v);
}
}  // namespace

std::vector<MadBuf> rmpp_segments(std::span<const uint8_t> msg, size_t hdr) {
  const size_t per = kMadSize - hdr;
  const size_t data = msg.size() > hdr ? msg.size() - hdr : 0;
  const size_t nseg = std::max<size_t>(1, (data + per - 1) / per);
  const size_t pad = nseg * per - data;
  const size_t rmpp_per = kMadSize - kRmppHeaderEnd;  // payload bytes a segment carries
  std::vector<MadBuf> out(nseg);
  for (size_t i = 0; i < nseg; ++i) {
    MadBuf& m = out[i];
    m.fill(0);
    std::copy(msg.begin(), msg.begin() + std::min(hdr, msg.size()), m.begin());
    const size_t off = hdr + i * per;
    if (off < msg.size())
      std::copy(msg.begin() + off, msg.begin() + std::min(msg.size(), off + per), m.begin() + hdr);
    uint32_t flags = kRmppFlagActive;
    uint32_t paylen = 0;
    if (i == 0) {
      flags |= kRmppFlagFirst;
      paylen = static_cast<uint32_t>(nseg * rmpp_per - pad);
    }
    if (i + 1 == nseg) {
      flags |= kRmppFlagLast;
      paylen = static_cast<uint32_t>(rmpp_per - pad);
    }
    put(m, IB_SA_RMPP_VERS_F, 1);
    put(m, IB_SA_RMPP_TYPE_F, kRmppTypeData);
    put(m, IB_SA_RMPP_RESP_F, 0x1f);
    put(m, IB_SA_RMPP_FLAGS_F, flags);
    put(m, IB_SA_RMPP_STATUS_F, 0);
    put(m, IB_SA_RMPP_SEGNUM_F, static_cast<uint32_t>(i + 1));
    put(m, IB_SA_RMPP_LEN_F, paylen);
  }
  return out;
}

Result<std::vector<uint8_t>> rmpp_reassemble(const std::vector<MadBuf>& segs, size_t hdr) {
  if (segs.empty()) return fail(Errc::kBadReply, "RMPP: no segments");
  std::map<uint32_t, const MadBuf*> by_num;
  for (const auto& s : segs) {
    if (get(s, IB_SA_RMPP_VERS_F) != 1 || get(s, IB_SA_RMPP_TYPE_F) != kRmppTypeData ||
        !(get(s, IB_SA_RMPP_FLAGS_F) & kRmppFlagActive))
      return fail(Errc::kBadReply, "RMPP: a segment is not an active DATA segment");
    const uint32_t n = get(s, IB_SA_RMPP_SEGNUM_F);
    if (n == 0 || !by_num.emplace(n, &s).second)
      return fail(Errc::kBadReply,
                  "RMPP: segment number " + std::to_string(n) + " bad or repeated");
  }
  const size_t nseg = by_num.size();
  if (by_num.rbegin()->first != nseg) return fail(Errc::kBadReply, "RMPP: a segment is missing");
  const MadBuf& first = *by_num.begin()->second;
  const MadBuf& last = *by_num.rbegin()->second;
  if (!(get(first, IB_SA_RMPP_FLAGS_F) & kRmppFlagFirst) ||
      !(get(last, IB_SA_RMPP_FLAGS_F) & kRmppFlagLast))
    return fail(Errc::kBadReply, "RMPP: first or last flag missing");
  const size_t per = kMadSize - hdr;
  const size_t rmpp_per = kMadSize - kRmppHeaderEnd;
  const size_t last_len = get(last, IB_SA_RMPP_LEN_F);
  if (last_len > rmpp_per || last_len < hdr - kRmppHeaderEnd)
    return fail(Errc::kBadReply, "RMPP: last segment's payload length " + std::to_string(last_len));
  const size_t pad = rmpp_per - last_len;
  if (nseg > 1 && get(first, IB_SA_RMPP_LEN_F) != nseg * rmpp_per - pad)
    return fail(Errc::kBadReply, "RMPP: first segment's payload length disagrees with the last's");
  std::vector<uint8_t> msg(first.begin(), first.begin() + hdr);
  for (const auto& [n, s] : by_num) msg.insert(msg.end(), s->begin() + hdr, s->end());
  msg.resize(hdr + nseg * per - pad);
  return msg;
}

}  // namespace weft::mad
