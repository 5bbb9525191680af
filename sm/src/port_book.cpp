#include "weft/sm/port_book.hpp"

#include <charconv>
#include <cstdlib>
#include <sstream>

#include "weft/log.hpp"
#include "weft/text.hpp"
#include "weft/text_file.hpp"

namespace weft::sm {

DownCause DownCause::flapping(uint32_t changes, uint32_t window_s) {
  DownCause c;
  c.kind = Kind::kFlapping;
  c.changes = changes;
  c.window_s = window_s;
  return c;
}

DownCause DownCause::unhealthy(uint64_t node, PortNum port, std::string reason) {
  DownCause c;
  c.kind = Kind::kUnhealthy;
  c.marked = {node, port};
  c.detail = std::move(reason);
  return c;
}

std::string DownCause::text() const {
  switch (kind) {
    case Kind::kFlapping:
      return std::to_string(changes) + " link changes within " + std::to_string(window_s) + " s";
    case Kind::kUnhealthy:
      return "unhealthy " + hex_guid(marked.first) + "/" + std::to_string(marked.second) + ": " +
             detail;
    case Kind::kOther:
      break;
  }
  return detail;
}

namespace {

// A whole decimal number, nothing else (the counts and port numbers weft writes;
// text::parse_u64 would also take 0x and octal forms, which would not read back the same).
template <class T>
bool number(std::string_view s, T& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

}  // namespace

DownCause DownCause::parse(std::string_view text) {
  DownCause other;
  other.detail = std::string(text);
  if (text.starts_with("unhealthy 0x")) {
    const auto slash = text.find('/'), colon = text.find(": ");
    uint64_t node = 0;
    unsigned port = 0;
    if (slash == std::string_view::npos || colon == std::string_view::npos || colon < slash ||
        !text::parse_u64(std::string(text.substr(10, slash - 10)), &node) ||
        !number(text.substr(slash + 1, colon - slash - 1), port) || port > 254)
      return other;
    return unhealthy(node, PortNum(port), std::string(text.substr(colon + 2)));
  }
  // "N link changes within S s"
  const auto sp = text.find(' ');
  constexpr std::string_view kMid = " link changes within ";
  uint32_t changes = 0, window = 0;
  if (sp == std::string_view::npos || !number(text.substr(0, sp), changes) ||
      text.substr(sp, kMid.size()) != kMid || !text.ends_with(" s"))
    return other;
  const auto w = text.substr(sp + kMid.size(), text.size() - 2 - sp - kMid.size());
  if (!number(w, window)) return other;
  return flapping(changes, window);
}

Result<void> PortBook::load() {
  down_.clear();
  const std::string path = store_->path("ports-down");
  auto r = for_each_state_line(path, [this](const std::string& line, const std::string& where) {
    std::istringstream ss(line);
    std::string g;
    unsigned port = 0;
    long long since = 0;
    const bool read = static_cast<bool>(ss >> g >> port >> since);
    std::string reason;
    if (read) std::getline(ss >> std::ws, reason);
    char* end = nullptr;
    const unsigned long long gv = std::strtoull(g.c_str(), &end, 0);
    if (!read || *end || gv == 0 || port == 0 || port > 254) {
      WEFT_LOG(Warn, "SM-0027") << where << "expected \"0xSWITCHGUID PORT SINCE REASON\", skipped";
      return;
    }
    down_[{gv, static_cast<PortNum>(port)}] = {DownCause::parse(reason), since};
  });
  if (!r) return r;
  if (!down_.empty())
    WEFT_LOG(Info, "SM-0028") << path << ": " << down_.size() << " switch ports kept down";
  return {};
}

Result<void> PortBook::save() const {
  std::string text = "# switch ports weft keeps disabled: 0xGUID PORT SINCE(unix s) REASON\n";
  for (const auto& [key, d] : down_)
    text += hex_guid(key.first) + " " + std::to_string(key.second) + " " +
            std::to_string(d.since_unix_s) + " " + d.cause.text() + "\n";
  return store_->write("ports-down", text);
}

Result<bool> PortBook::keep_down(const SwitchPort& key, DownCause cause, int64_t now) {
  if (down_.count(key)) return false;
  down_[key] = {std::move(cause), now};
  if (auto r = save(); !r) return std::unexpected(r.error());
  return true;
}

Result<PortBook::Entry> PortBook::release(const SwitchPort& key) {
  auto it = down_.find(key);
  if (it == down_.end())
    return fail(Errc::kInvalidInput, "port " + hex_guid(key.first) + "/" +
                                         std::to_string(key.second) + " is not kept down by weft");
  const Entry was = it->second;
  down_.erase(it);
  if (auto r = save(); !r) {
    down_[key] = was;
    return std::unexpected(r.error());
  }
  released_.insert(key);
  return was;
}

std::vector<SwitchPort> PortBook::isolating(uint64_t node, PortNum port) const {
  std::vector<SwitchPort> out;
  for (const auto& [key, d] : down_)
    if (d.cause.kind == DownCause::Kind::kUnhealthy && d.cause.marked == SwitchPort{node, port})
      out.push_back(key);
  return out;
}

}  // namespace weft::sm
