// weft/log.hpp — leveled logging with stable, greppable message ids.
//
//   WEFT_LOG(Info, "SM-0001") << "SUBNET UP: " << n << " switches";
//
// Lines look like: `2026-11-29 16:40:01.123 INFO  SM-0001 SUBNET UP ...`.
// Every message carries an id; `grep SM-0001` finds a bring-up in any log.
// The sink is stderr unless set_file() names a file. Thread-safe.
#pragma once

#include <cstdio>
#include <sstream>
#include <string>
#include <string_view>

namespace weft::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void set_level(Level l);
Level level();
// Logs to `path` (appending) instead of stderr. Returns false with errno set on failure.
bool set_file(const std::string& path);
void write(Level l, std::string_view id, std::string_view text);
bool parse_level(std::string_view s, Level* out);

class Line {
 public:
  Line(Level l, std::string_view id) : level_(l), id_(id) {}
  ~Line() { write(level_, id_, os_.str()); }
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;
  template <class T>
  Line& operator<<(const T& v) {
    os_ << v;
    return *this;
  }

 private:
  Level level_;
  std::string_view id_;
  std::ostringstream os_;
};

}  // namespace weft::log

// A for-statement, not an if/else, so `if (x) WEFT_LOG(...) << ...;` has no dangling else.
#define WEFT_LOG(lvl, id)                                                                        \
  for (bool weft_log_once_ = ::weft::log::Level::k##lvl >= ::weft::log::level(); weft_log_once_; \
       weft_log_once_ = false)                                                                   \
  ::weft::log::Line(::weft::log::Level::k##lvl, id)
