#include "weft/roce/sonic_redis.hpp"

#include <hiredis.h>

#include <charconv>
#include <memory>
#include <vector>

namespace weft::roce {

using nlohmann::json;

Result<RedisUrl> parse_redis_url(const std::string& url) {
  const std::string pre = "redis://";
  if (!url.starts_with(pre))
    return fail(Errc::kInvalidInput, url + ": expected redis://HOST:PORT/DB");
  std::string rest = url.substr(pre.size());
  RedisUrl u;
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    const std::string d = rest.substr(slash + 1);
    auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), u.db);
    if (d.empty() || ec != std::errc() || p != d.data() + d.size() || u.db < 0 || u.db > 15)
      return fail(Errc::kInvalidInput,
                  url + ": database \"" + d + "\" is not 0..15 (CONFIG_DB is 4)");
    rest = rest.substr(0, slash);
  }
  if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    const std::string p = rest.substr(colon + 1);
    auto [e, ec] = std::from_chars(p.data(), p.data() + p.size(), u.port);
    if (p.empty() || ec != std::errc() || e != p.data() + p.size() || u.port < 1 || u.port > 65535)
      return fail(Errc::kInvalidInput, url + ": port \"" + p + "\" is not 1..65535");
    rest = rest.substr(0, colon);
  }
  if (!rest.empty()) u.host = rest;
  return u;
}

namespace {

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;
using Reply = std::unique_ptr<redisReply, ReplyFree>;

Result<Context> connect(const RedisUrl& u) {
  const timeval tv{5, 0};
  Context c(redisConnectWithTimeout(u.host.c_str(), u.port, tv));
  if (!c) return fail(Errc::kIo, u.text() + ": out of memory");
  if (c->err) return fail(Errc::kIo, u.text() + ": " + c->errstr);
  redisSetTimeout(c.get(), tv);
  return c;
}

Result<Reply> command(redisContext* c, const RedisUrl& u, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) argv.push_back(a.data()), lens.push_back(a.size());
  Reply r(static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data())));
  if (!r)
    return fail(Errc::kIo,
                u.text() + ": " + args[0] + ": " + (c->errstr[0] ? c->errstr : "no reply"));
  if (r->type == REDIS_REPLY_ERROR)
    return fail(Errc::kBadReply, u.text() + ": " + args[0] + ": " + r->str);
  return r;
}

// A connection on the URL's database.
Result<Context> connect_db(const RedisUrl& url) {
  auto c = connect(url);
  if (!c) return std::unexpected(c.error());
  if (auto r = command(c->get(), url, {"SELECT", std::to_string(url.db)}); !r)
    return std::unexpected(r.error());
  return c;
}

// Tables whose entries weft merges into (the port keeps fields weft does not own).
bool merged(const std::string& table) {
  return table == "PORT" || table == "CABLE_LENGTH" || table == "DEVICE_METADATA";
}

const char* const kTables[] = {"PORT_QOS_MAP",
                               "DSCP_TO_TC_MAP",
                               "DOT1P_TO_TC_MAP",
                               "TC_TO_QUEUE_MAP",
                               "TC_TO_PRIORITY_GROUP_MAP",
                               "MAP_PFC_PRIORITY_TO_QUEUE",
                               "WRED_PROFILE",
                               "QUEUE",
                               "SCHEDULER",
                               "BUFFER_PROFILE",
                               "BUFFER_PG",
                               "CABLE_LENGTH",
                               "PFC_WD",
                               "PORT",
                               "DEVICE_METADATA"};

}  // namespace

Result<WriteStats> write_config_db(const RedisUrl& url, const json& db) {
  if (!db.is_object()) return fail(Errc::kInvalidInput, "config_db: expected an object of tables");
  auto c = connect_db(url);
  if (!c) return std::unexpected(c.error());
  if (auto r = command(c->get(), url, {"MULTI"}); !r) return std::unexpected(r.error());
  WriteStats st;
  for (auto& [table, entries] : db.items()) {
    if (!entries.is_object())
      return fail(Errc::kInvalidInput, "config_db: " + table + ": expected an object");
    for (auto& [key, fields] : entries.items()) {
      if (!fields.is_object() || fields.empty())
        return fail(Errc::kInvalidInput,
                    "config_db: " + table + "|" + key + ": expected an object of fields");
      const std::string k = table + "|" + key;
      if (!merged(table)) {
        if (auto r = command(c->get(), url, {"DEL", k}); !r) return std::unexpected(r.error());
        ++st.replaced;
      }
      std::vector<std::string> args = {"HSET", k};
      for (auto& [f, v] : fields.items()) {
        args.push_back(f);
        args.push_back(v.is_string() ? v.get<std::string>() : v.dump());
        ++st.fields;
      }
      if (auto r = command(c->get(), url, args); !r) return std::unexpected(r.error());
      ++st.keys;
    }
  }
  auto r = command(c->get(), url, {"EXEC"});
  if (!r) return std::unexpected(r.error());
  if ((*r)->type != REDIS_REPLY_ARRAY)
    return fail(Errc::kBadReply, url.text() + ": EXEC: the transaction was aborted");
  for (size_t i = 0; i < (*r)->elements; ++i)
    if ((*r)->element[i]->type == REDIS_REPLY_ERROR)
      return fail(Errc::kBadReply, url.text() + ": " + (*r)->element[i]->str);
  return st;
}

namespace {

// HGETALL key as a JSON object of strings (null: the key holds no hash).
Result<json> hgetall(redisContext* c, const RedisUrl& url, const std::string& key) {
  auto h = command(c, url, {"HGETALL", key});
  if (!h) return std::unexpected(h.error());
  if ((*h)->type != REDIS_REPLY_ARRAY) return json();
  json fields = json::object();
  for (size_t j = 0; j + 1 < (*h)->elements; j += 2) {
    const redisReply* k = (*h)->element[j];
    const redisReply* v = (*h)->element[j + 1];
    if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
      return fail(Errc::kBadReply, url.text() + ": HGETALL " + key + ": unexpected reply");
    fields[std::string(k->str, k->len)] = std::string(v->str, v->len);
  }
  return fields;
}

}  // namespace

Result<json> read_counters_db(const RedisUrl& url) {
  auto c = connect_db(url);
  if (!c) return std::unexpected(c.error());
  json db = json::object();
  for (const char* map : {"COUNTERS_PORT_NAME_MAP", "COUNTERS_QUEUE_NAME_MAP",
                          "COUNTERS_QUEUE_TYPE_MAP", "COUNTERS_PG_NAME_MAP"}) {
    auto h = hgetall(c->get(), url, map);
    if (!h) return std::unexpected(h.error());
    if (!h->is_null() && !h->empty()) db[map] = std::move(*h);  // (no key: an empty list)
  }
  if (!db.contains("COUNTERS_PORT_NAME_MAP") && !db.contains("COUNTERS_QUEUE_NAME_MAP") &&
      !db.contains("COUNTERS_PG_NAME_MAP"))
    return fail(Errc::kInvalidInput,
                url.text() + ": no COUNTERS_PORT_NAME_MAP: not SONiC's COUNTERS_DB (database 2)?");
  // Each object's counters; a priority group's headroom watermarks too (they live in
  // tables of their own).
  for (const char* map :
       {"COUNTERS_PORT_NAME_MAP", "COUNTERS_QUEUE_NAME_MAP", "COUNTERS_PG_NAME_MAP"}) {
    if (!db.contains(map)) continue;
    const bool pg = std::string_view(map) == "COUNTERS_PG_NAME_MAP";
    for (const auto& [name, oid] : db[map].items()) {
      if (!oid.is_string())
        return fail(Errc::kBadReply, url.text() + ": " + map + " " + name + ": not an oid");
      for (const char* table :
           {"COUNTERS:", "PERSISTENT_WATERMARKS:", "USER_WATERMARKS:", "PERIODIC_WATERMARKS:"}) {
        if (!pg && std::string_view(table) != "COUNTERS:") break;
        const std::string key = table + oid.get<std::string>();
        if (db.contains(key)) continue;
        auto h = hgetall(c->get(), url, key);
        if (!h) return std::unexpected(h.error());
        if (!h->is_null() && !h->empty()) db[key] = std::move(*h);
      }
    }
  }
  return db;
}

Result<json> read_config_db(const RedisUrl& url) {
  auto c = connect_db(url);
  if (!c) return std::unexpected(c.error());
  json db = json::object();
  for (const char* table : kTables) {
    std::string cursor = "0";
    for (int guard = 0; guard < 1'000'000; ++guard) {  // SCAN ends when the cursor comes back to 0
      auto r = command(c->get(), url,
                       {"SCAN", cursor, "MATCH", std::string(table) + "|*", "COUNT", "1000"});
      if (!r) return std::unexpected(r.error());
      const redisReply* rep = r->get();
      if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
          rep->element[0]->type != REDIS_REPLY_STRING || rep->element[1]->type != REDIS_REPLY_ARRAY)
        return fail(Errc::kBadReply, url.text() + ": SCAN: unexpected reply");
      cursor.assign(rep->element[0]->str, rep->element[0]->len);
      for (size_t i = 0; i < rep->element[1]->elements; ++i) {
        const std::string key(rep->element[1]->element[i]->str, rep->element[1]->element[i]->len);
        auto h = hgetall(c->get(), url, key);
        if (!h) return std::unexpected(h.error());
        if (h->is_null()) continue;  // not a hash
        db[table][key.substr(std::string(table).size() + 1)] = std::move(*h);
      }
      if (cursor == "0") break;
    }
  }
  return db;
}

}  // namespace weft::roce
