// weft/sm/port_book.hpp — the switch ports weft keeps disabled, and why: a link that
// flapped (flap_policy down) or a port the PerfMgr marked unhealthy (unhealthy_port_policy
// isolate). Each entry's cause is typed; its text (REST, events, the file) is made from
// it and read back only from the state store's "ports-down" document, where a change is
// written before the caller goes on.
//
//   PortBook book(store);
//   book.load();                                                   // at the first sweep
//   book.keep_down({sw, 3}, DownCause::flapping(6, 60), now);      // on disk, then true
//   for (auto key : book.isolating(node, port)) enable(key);       // mark_healthy
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/result.hpp"
#include "weft/store/state_store.hpp"
#include "weft/types.hpp"

namespace weft::sm {

using SwitchPort = std::pair<uint64_t, PortNum>;  // (switch GUID, port)

struct DownCause {
  enum class Kind : uint8_t { kFlapping, kUnhealthy, kOther };
  Kind kind = Kind::kOther;
  uint32_t changes = 0, window_s = 0;     // kFlapping: link changes within the window
  std::pair<uint64_t, PortNum> marked{};  // kUnhealthy: the port marked (node GUID, port)
  std::string detail;                     // kUnhealthy: the mark's reason; kOther: the text as read

  static DownCause flapping(uint32_t changes, uint32_t window_s);
  static DownCause unhealthy(uint64_t node, PortNum port, std::string reason);
  // "6 link changes within 60 s", "unhealthy 0x0002c90300001001/1: SymbolErrorCounter ...".
  std::string text() const;
  // text() read back (the file's REASON column); any other text is kOther, kept as it is.
  static DownCause parse(std::string_view text);
  bool operator==(const DownCause&) const = default;
};

class PortBook {
 public:
  struct Entry {
    DownCause cause;
    int64_t since_unix_s = 0;
  };
  explicit PortBook(std::shared_ptr<store::StateStore> store) : store_(std::move(store)) {}

  // Reads "ports-down" (lines that are not "0xSWITCHGUID PORT SINCE REASON" are skipped,
  // with a warning naming them).
  [[nodiscard]] Result<void> load();
  const std::map<SwitchPort, Entry>& down() const { return down_; }
  bool contains(const SwitchPort& key) const { return down_.count(key) > 0; }
  // Keeps `key` down from `now` for `cause`; false when it already was. Kept in memory
  // even when the document cannot be written (the error says so).
  [[nodiscard]] Result<bool> keep_down(const SwitchPort& key, DownCause cause, int64_t now);
  // Lets `key` come up: out of the book (on disk first: when the write fails it stays)
  // and among released() until a sweep has enabled it. Fails for a port not kept down.
  [[nodiscard]] Result<Entry> release(const SwitchPort& key);
  // The switch ports kept down because `node`/`port` was marked unhealthy.
  std::vector<SwitchPort> isolating(uint64_t node, PortNum port) const;
  // Released ports the sweep is still to enable; it drops those it saw enabled.
  std::set<SwitchPort>& released() { return released_; }

 private:
  [[nodiscard]] Result<void> save() const;
  std::shared_ptr<store::StateStore> store_;
  std::map<SwitchPort, Entry> down_;
  std::set<SwitchPort> released_;
};

}  // namespace weft::sm
