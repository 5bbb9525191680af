// weft/roce/sonic_redis.hpp — a SONiC switch's CONFIG_DB (Redis database 4) written and read
// through hiredis. Keys are "TABLE|KEY" hashes, as SONiC's config_db keeps them.
//
//   auto url = weft::roce::parse_redis_url("redis://127.0.0.1:6379/4");
//   auto wrote = weft::roce::write_config_db(*url, render_sonic(cfg));   // MULTI/EXEC
//   auto db = weft::roce::read_config_db(*url);                         // the QoS tables
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "weft/result.hpp"

namespace weft::roce {

struct RedisUrl {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 4;
  std::string text() const {
    return "redis://" + host + ":" + std::to_string(port) + "/" + std::to_string(db);
  }
};
Result<RedisUrl> parse_redis_url(const std::string& url);

struct WriteStats {
  size_t keys = 0, fields = 0, replaced = 0;  // replaced: keys deleted first (weft owns them whole)
};
// Writes every table of `db` in one transaction. Entries weft renders whole (maps, queues,
// PGs, profiles, PORT_QOS_MAP, PFC_WD) replace what was there; PORT and CABLE_LENGTH
// entries are merged field by field (a port keeps its lanes, alias, ...).
Result<WriteStats> write_config_db(const RedisUrl& url, const nlohmann::json& db);
// The tables weft reads (and DEVICE_METADATA), as config_db JSON.
Result<nlohmann::json> read_config_db(const RedisUrl& url);
// From COUNTERS_DB (database 2): the port and queue name maps, the queue type map and the
// COUNTERS:oid hash of every port and queue they name, as {KEY: {FIELD: VALUE}} (what
// roce::parse_counters_db reads).
Result<nlohmann::json> read_counters_db(const RedisUrl& url);

}  // namespace weft::roce
