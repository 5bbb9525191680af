// The SA's shared record helpers: field spans probed from libibmad's tables, matching a
// candidate record against a request's components, IBTA rate codes.
#include <algorithm>

#include "records.hpp"

namespace weft::sa::detail {

Span probe(MAD_FIELDS f, int base, bool wide) {
  std::array<uint8_t, 256> buf{};
  if (wide)
    mad_set_field64(buf.data(), base, f, ~uint64_t(0));
  else
    mad_set_field(buf.data(), base, f, ~uint32_t(0));
  Span s;
  for (size_t i = 0; i < buf.size(); ++i)
    if (buf[i]) s.bytes.push_back({uint16_t(i), buf[i]});
  return s;
}

Span bytes(uint16_t from, uint16_t to, uint8_t mask) {
  Span s;
  for (uint16_t i = from; i < to; ++i) s.bytes.push_back({i, mask});
  return s;
}

bool same(const uint8_t* a, const uint8_t* b, const Span& s) {
  for (auto [i, m] : s.bytes)
    if ((a[i] & m) != (b[i] & m)) return false;
  return true;
}

struct RateCode {
  uint8_t code;
  double gbps;
};
constexpr RateCode kRates[] = {{2, 2.5},  {5, 5},    {3, 10},   {11, 14},  {6, 20},
                               {15, 25},  {4, 30},   {7, 40},   {20, 50},  {12, 56},
                               {8, 60},   {9, 80},   {16, 100}, {13, 112}, {10, 120},
                               {14, 168}, {17, 200}, {18, 300}, {21, 400}, {22, 600}};
double rate_gbps(uint8_t code) {
  for (auto r : kRates)
    if (r.code == code) return r.gbps;
  return 0;
}
// The fastest code not above `gbps`.
uint8_t rate_code(double gbps) {
  uint8_t best = 2;
  double bg = 0;
  for (auto r : kRates)
    if (r.gbps <= gbps + 1e-9 && r.gbps > bg) best = r.code, bg = r.gbps;
  return best;
}
// A link's MTU: the neighbour MTU the SM set, else the port's own cap.
bool add(Answer& a, const Layout& l, const uint8_t* cand, const Query& q) {
  for (size_t b = 0; b < l.fields.size(); ++b)
    if (bit(q.mask, int(b)) && !same(cand, q.rec, l.fields[b])) return false;
  if (a.count >= kMaxRecords) {
    a.status = kSaStatusNoResources;
    return false;
  }
  const size_t padded = (l.size + 7) / 8 * 8;
  a.records.insert(a.records.end(), cand, cand + l.size);
  a.records.resize(a.records.size() + (padded - l.size), 0);
  ++a.count;
  return true;
}

// Components beyond a record's known fields make a request this SA cannot honour.
bool mask_ok(const Layout& l, uint64_t mask) {
  return l.fields.size() >= 64 || (mask >> l.fields.size()) == 0;
}

}  // namespace weft::sa::detail
