#include "weft/rest/hostlist.hpp"

#include <fmt/format.h>
#include <charconv>

namespace weft::rest {

namespace {

// The numbers of one bracket group: "01-04,07" -> {"01","02","03","04","07"}.
Result<std::vector<std::string>> group(std::string_view g, size_t limit) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= g.size()) {
    size_t comma = g.find(',', start);
    if (comma == std::string_view::npos) comma = g.size();
    const std::string_view item = g.substr(start, comma - start);
    const size_t dash = item.find('-');
    const std::string_view lo = item.substr(0, dash);
    const std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
    unsigned long a = 0, b = 0;
    auto num = [](std::string_view s, unsigned long& v) {
      if (s.empty() || s.size() > 9) return false;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      return ec == std::errc() && p == s.data() + s.size();
    };
    if (!num(lo, a) || !num(hi, b) || b < a)
      return fail(Errc::kInvalidInput, fmt::format("\"{}\" is not a number or range", item));
    if (b - a + out.size() >= limit)
      return fail(Errc::kInvalidInput, fmt::format("more than {} hosts", limit));
    const size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;  // zero padding kept
    for (unsigned long v = a; v <= b; ++v) out.push_back(fmt::format("{:0{}}", v, width));
    start = comma + 1;
  }
  return out;
}

Result<void> expand_one(std::string_view name, std::vector<std::string>& out, size_t limit) {
  std::vector<std::string> acc{""};
  size_t i = 0;
  while (i < name.size()) {
    const size_t open = name.find('[', i);
    const std::string_view lit = name.substr(i, open == std::string_view::npos ? open : open - i);
    for (auto& a : acc) a += lit;
    if (open == std::string_view::npos) break;
    const size_t close = name.find(']', open);
    if (close == std::string_view::npos)
      return fail(Errc::kInvalidInput, fmt::format("\"{}\": '[' not closed", name));
    auto nums = group(name.substr(open + 1, close - open - 1), limit);
    if (!nums)
      return fail(Errc::kInvalidInput, fmt::format("\"{}\": {}", name, nums.error().message));
    if (acc.size() * nums->size() + out.size() > limit)
      return fail(Errc::kInvalidInput, fmt::format("more than {} hosts", limit));
    std::vector<std::string> next;
    next.reserve(acc.size() * nums->size());
    for (const auto& a : acc)
      for (const auto& n : *nums) next.push_back(a + n);
    acc = std::move(next);
    i = close + 1;
  }
  for (auto& a : acc)
    if (!a.empty()) out.push_back(std::move(a));
  return {};
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view list, size_t limit) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0)
      return fail(Errc::kInvalidInput, fmt::format("hostlist: ']' at {} closes nothing", i));
    if ((c == ',' && depth == 0) || i == list.size()) {
      std::string_view item = list.substr(start, i - start);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (!item.empty())
        if (auto r = expand_one(item, out, limit); !r)
          return fail(Errc::kInvalidInput, "hostlist: " + r.error().message);
      start = i + 1;
    }
  }
  if (depth > 0) return fail(Errc::kInvalidInput, "hostlist: '[' not closed");
  return out;
}

}  // namespace weft::rest
