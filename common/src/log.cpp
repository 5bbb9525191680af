#include "weft/log.hpp"

#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>

namespace weft::log {
namespace {
std::atomic<Level> g_level{Level::kInfo};
std::mutex g_mu;
FILE* g_sink = nullptr;  // nullptr = stderr

const char* level_name(Level l) {
  switch (l) {
    case Level::kDebug:
      return "DEBUG";
    case Level::kInfo:
      return "INFO ";
    case Level::kWarn:
      return "WARN ";
    case Level::kError:
      return "ERROR";
  }
  return "?    ";
}
}  // namespace

void set_level(Level l) {
  g_level.store(l);
}
Level level() {
  return g_level.load(std::memory_order_relaxed);
}

bool set_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "a");
  if (!f) return false;
  std::lock_guard lk(g_mu);
  if (g_sink) std::fclose(g_sink);
  g_sink = f;
  return true;
}

bool parse_level(std::string_view s, Level* out) {
  if (s == "debug")
    *out = Level::kDebug;
  else if (s == "info")
    *out = Level::kInfo;
  else if (s == "warn")
    *out = Level::kWarn;
  else if (s == "error")
    *out = Level::kError;
  else
    return false;
  return true;
}

void write(Level l, std::string_view id, std::string_view text) {
  if (l < level()) return;
  auto now = std::chrono::system_clock::now();
  auto t = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
  std::lock_guard lk(g_mu);
  FILE* out = g_sink ? g_sink : stderr;
  std::fprintf(out, "%s.%03d %s %.*s %.*s\n", ts, ms, level_name(l), static_cast<int>(id.size()),
               id.data(), static_cast<int>(text.size()), text.data());
  std::fflush(out);
}

}  // namespace weft::log
