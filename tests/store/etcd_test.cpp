// The etcd client and the state store against a real etcd (Debian's etcd-server, started
// on loopback for each test): the JSON gateway's calls, a watch, endpoints tried in
// turn; a master's writes fenced by its lease, a standby's copy kept by the watch, a
// master whose lease expired refused, and what a master wrote while etcd was away
// written back when it returns.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "../fuzz.hpp"
#include "local_etcd.hpp"
#include "weft/store/state_store.hpp"
#include "weft/text_file.hpp"

using namespace weft;
using namespace weft::store;
using nlohmann::json;
using weft::testing::LocalEtcd;

namespace {

template <class Pred>
bool wait_until(Pred p, std::chrono::milliseconds limit, std::function<void()> each = {}) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (each) each();
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return p();
}

struct Scratch {
  std::string path;
  Scratch() {
    char tmpl[] = "/tmp/weft-store-XXXXXX";
    path = ::mkdtemp(tmpl) ? tmpl : "/tmp/weft-store-failed";
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// The documents these tests write, as their owners name them to the store (the SM in
// weft/sm/documents.hpp, REST in weft/rest/auth.hpp).
const std::vector<StateDoc> kDocs = {
    {"guid2lid", 0644},        {"guid2mkey", 0600},  {"neighbors", 0644},
    {"unhealthy-ports", 0644}, {"ports-down", 0644}, {"partitions.rest.conf", 0640},
    {"rest-tokens", 0600},
};

std::shared_ptr<StateStore> open_store(const LocalEtcd& etcd, const std::string& dir,
                                       const std::string& self, int lease_s = 3) {
  StateStoreOptions o;
  o.docs = kDocs;
  o.lease_s = lease_s;
  o.self = self;
  auto s = make_state_store(etcd.url("/weft/test"), dir, o);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  return s ? *s : nullptr;
}

bool holds(const StateStore& s) {
  return s.status().detail.value("holds_master_key", false);
}

// What etcd holds for a document: its generation and text.
std::pair<uint64_t, std::string> in_etcd(EtcdClient& c, const std::string& name) {
  auto r = c.range("/weft/test/state/" + name);
  if (!r || r->kvs.empty()) return {0, ""};
  json j = json::parse(r->kvs[0].value);
  return {j["generation"].get<uint64_t>(), j["text"].get<std::string>()};
}

}  // namespace

TEST(EtcdUrl, ReadsEndpointsAndPrefixAndNamesWhatIsWrong) {
  auto c = parse_etcd_url("etcd://10.0.0.5:2379,etcd-b:2380/weft/fabric-a");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->endpoints, (std::vector<std::string>{"10.0.0.5:2379", "etcd-b:2380"}));
  EXPECT_EQ(c->prefix, "/weft/fabric-a/");
  EXPECT_FALSE(c->tls());
  for (const char* bad : {"http://h:1/p", "etcd://h:1", "etcd://h:1/", "etcd://h/p", "etcd://h:0/p",
                          "etcd://h:99999/p", "etcd://:1/p", "etcd://h:1,/p", "etcd://h:x1/p"}) {
    auto r = parse_etcd_url(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("etcd://HOST:PORT"), std::string::npos) << r.error().message;
  }
  auto s = make_state_store("redis://h:1/p", "/tmp", {});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("state_store"), std::string::npos);
  StateStoreOptions shortlease;
  shortlease.lease_s = 1;
  EXPECT_FALSE(make_state_store("etcd://h:1/p", "/tmp", shortlease));
}

TEST(EtcdClient, Base64AsTheGatewayWritesIt) {
  for (std::string raw : {std::string(), std::string("a"), std::string("ab"), std::string("abc"),
                          std::string("\0\xff\x10 binary", 10)}) {
    auto back = EtcdClient::unb64(EtcdClient::b64(raw));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, raw);
  }
  EXPECT_EQ(EtcdClient::b64("foo"), "Zm9v");
  EXPECT_FALSE(EtcdClient::unb64("Zm9"));
  EXPECT_FALSE(EtcdClient::unb64("Z!!v"));
}

TEST(EtcdClient, TransactionsRangesAndLeasesOnARealEtcd) {
  LocalEtcd etcd;
  EtcdClient c(etcd.config("/t/"));
  // Create-if-absent: once.
  auto first = c.txn({EtcdCompare::absent("/t/a")}, {EtcdOp::put("/t/a", "one")});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(first->succeeded);
  auto again = c.txn({EtcdCompare::absent("/t/a")}, {EtcdOp::put("/t/a", "two")});
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->succeeded);
  EXPECT_TRUE(c.txn({EtcdCompare::value_is("/t/a", "one")},
                    {EtcdOp::put("/t/b", std::string("\0\x01z", 3))})
                  ->succeeded);
  auto all = c.range("/t/", true);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->kvs.size(), 2u);
  EXPECT_EQ(all->kvs[0].value, "one");
  EXPECT_EQ(all->kvs[1].value, std::string("\0\x01z", 3));
  EXPECT_GE(all->revision, first->revision);
  EXPECT_TRUE(c.range("/t/none")->kvs.empty());

  // A key on a lease: there while the lease lives, gone once it is revoked; a compare on
  // the lease holds only for that lease.
  auto lease = c.grant(30);
  ASSERT_TRUE(lease) << lease.error().message;
  ASSERT_TRUE(c.txn({}, {EtcdOp::put("/t/held", "x", *lease)})->succeeded);
  EXPECT_TRUE(c.txn({EtcdCompare::lease_is("/t/held", *lease)}, {})->succeeded);
  EXPECT_FALSE(c.txn({EtcdCompare::lease_is("/t/held", *lease + 1)}, {})->succeeded);
  auto ttl = c.keepalive(*lease);
  ASSERT_TRUE(ttl);
  EXPECT_GT(*ttl, 20);
  ASSERT_TRUE(c.revoke(*lease));
  EXPECT_TRUE(c.range("/t/held")->kvs.empty());
  EXPECT_EQ(*c.keepalive(*lease), 0) << "a revoked lease has no TTL left";
  EXPECT_FALSE(c.txn({EtcdCompare::lease_is("/t/held", *lease)}, {})->succeeded);
  EXPECT_TRUE(c.revoke(*lease)) << "revoking what is gone is no error";
}

TEST(EtcdClient, AWatchDeliversEachChangeAndStopsWhenAsked) {
  LocalEtcd etcd;
  EtcdClient c(etcd.config("/w/"));
  auto start = c.range("/w/", true);
  ASSERT_TRUE(start);
  std::mutex mu;
  std::vector<std::string> seen;
  std::atomic<bool> created{false};
  std::stop_source stop;
  Result<void> ended;
  std::thread t([&] {
    ended = c.watch(
        "/w/", start->revision + 1,
        [&](const std::vector<EtcdEvent>& evs, int64_t) {
          created = true;
          std::lock_guard lk(mu);
          for (const auto& e : evs)
            seen.push_back((e.deleted ? "-" : "+") + e.kv.key + "=" + e.kv.value);
        },
        stop.get_token());
  });
  ASSERT_TRUE(wait_until([&] { return created.load(); }, std::chrono::seconds(10)));
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(c.txn({}, {EtcdOp::put("/w/k" + std::to_string(i), std::to_string(i))}));
  ASSERT_TRUE(c.txn({}, {EtcdOp::remove("/w/k0")}));
  ASSERT_TRUE(c.txn({}, {EtcdOp::put("/other/x", "not watched")}));
  EXPECT_TRUE(wait_until(
      [&] {
        std::lock_guard lk(mu);
        return seen.size() >= 6;
      },
      std::chrono::seconds(10)));
  stop.request_stop();
  t.join();
  EXPECT_TRUE(ended) << ended.error().message;
  std::lock_guard lk(mu);
  EXPECT_EQ(seen, (std::vector<std::string>{"+/w/k0=0", "+/w/k1=1", "+/w/k2=2", "+/w/k3=3",
                                            "+/w/k4=4", "-/w/k0="}));
}

TEST(EtcdClient, TriesTheNextEndpointAndNamesOnesThatDoNotAnswer) {
  LocalEtcd etcd;
  EtcdConfig cfg = etcd.config("/e/");
  cfg.endpoints.insert(cfg.endpoints.begin(), "127.0.0.1:1");  // nothing listens there
  EtcdClient c(cfg);
  ASSERT_TRUE(c.range("/e/x")) << "the second endpoint answers";
  EXPECT_EQ(c.endpoint(), etcd.endpoint());
  EtcdConfig dead;
  dead.endpoints = {"127.0.0.1:1"};
  dead.prefix = "/e/";
  EtcdClient d(dead);
  auto r = d.range("/e/x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnreachable);
  EXPECT_NE(r.error().message.find("127.0.0.1:1"), std::string::npos) << r.error().message;
}

TEST(StateStore, HoldsOnlyTheDocumentsItsOwnersNamed) {
  // The store knows no document by itself: a name no owner gave it is refused, in a
  // directory and in etcd, and nothing reaches disk.
  Scratch s;
  auto dir = directory_store(s.path, {{"guid2lid", 0644}});
  ASSERT_TRUE(dir->write("guid2lid", "0x1 0x1 0x1\n"));
  auto r = dir->write("rest-tokens", "t\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kInternal);
  EXPECT_NE(
      r.error().message.find("\"rest-tokens\" is no document of this store (it holds: guid2lid)"),
      std::string::npos)
      << r.error().message;
  EXPECT_FALSE(std::filesystem::exists(s.path + "/rest-tokens"));

  LocalEtcd etcd;
  Scratch a;
  StateStoreOptions o;
  o.docs = {{"guid2lid", 0644}};
  o.lease_s = 3;
  o.self = "A";
  auto st = make_state_store(etcd.url("/weft/test"), a.path, o);
  ASSERT_TRUE(st) << st.error().message;
  (*st)->set_master(true);
  (*st)->start();
  ASSERT_TRUE(wait_until([&] { return holds(**st); }, std::chrono::seconds(10),
                         [&] { (*st)->fabric_contact(); }));
  auto refused = (*st)->write("ports-down", "0x5 3 100 flapping\n");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("no document of this store"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(std::filesystem::exists(a.path + "/ports-down"));
  EtcdClient c(etcd.config("/weft/test/"));
  EXPECT_TRUE(c.range("/weft/test/state/ports-down")->kvs.empty());
  // A standby is given the same list: a key in etcd no owner named never reaches disk.
  ASSERT_TRUE(c.txn({}, {EtcdOp::put("/weft/test/state/ports-down",
                                     R"({"generation": 1, "writer": "A", "text": "x\n"})")}));
  ASSERT_TRUE((*st)->write("guid2lid", "0x2 0x2 0x2\n"));
  Scratch b;
  o.self = "B";
  auto standby = make_state_store(etcd.url("/weft/test"), b.path, o);
  ASSERT_TRUE(standby);
  (*standby)->start();
  ASSERT_TRUE(wait_until(
      [&] {
        auto t = read_text_file(b.path + "/guid2lid");
        return t && *t == "0x2 0x2 0x2\n";
      },
      std::chrono::seconds(20)));
  EXPECT_FALSE(std::filesystem::exists(b.path + "/ports-down"));
}

TEST(StateStore, TheDirectoryStoreWritesTheFileWithItsMode) {
  Scratch s;
  StateStoreOptions o;
  o.docs = kDocs;
  o.paths["partitions.rest.conf"] = s.path + "/elsewhere.conf";
  auto st = make_state_store("", s.path, o);
  ASSERT_TRUE(st);
  ASSERT_TRUE((*st)->write("guid2mkey", "0x1 0x2\n"));
  EXPECT_EQ(*read_text_file(s.path + "/guid2mkey"), "0x1 0x2\n");
  EXPECT_EQ(
      std::filesystem::status(s.path + "/guid2mkey").permissions() & std::filesystem::perms::all,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ((*st)->path("partitions.rest.conf"), s.path + "/elsewhere.conf");
  EXPECT_EQ((*st)->status().kind, "directory");
  EXPECT_FALSE((*st)->status().degraded);
}

TEST(StateStore, TheMastersWritesReachEtcdAndAStandbysCopy) {
  LocalEtcd etcd;
  Scratch a, b;
  std::mutex mu;  // before the stores: their threads call back until they go
  std::set<std::string> changed;
  auto master = open_store(etcd, a.path, "A");
  auto standby = open_store(etcd, b.path, "B");
  standby->on_changed([&](const std::vector<std::string>& names) {
    std::lock_guard lk(mu);
    changed.insert(names.begin(), names.end());
  });
  master->set_master(true);
  master->start();
  standby->start();
  ASSERT_TRUE(wait_until([&] { return holds(*master); }, std::chrono::seconds(10)));
  EtcdClient c(etcd.config("/weft/test/"));
  EXPECT_EQ(c.range("/weft/test/master")->kvs.at(0).value, "A");

  ASSERT_TRUE(master->write("guid2lid", "0x10 1 1\n"));
  ASSERT_TRUE(master->write("guid2lid", "0x10 1 1\n0x11 2 2\n"));
  EXPECT_EQ(in_etcd(c, "guid2lid"), (std::pair<uint64_t, std::string>{2, "0x10 1 1\n0x11 2 2\n"}));
  EXPECT_EQ(*read_text_file(a.path + "/guid2lid"), "0x10 1 1\n0x11 2 2\n");
  ASSERT_TRUE(master->write("rest-tokens", "tok\n"));
  ASSERT_TRUE(wait_until(
      [&] {
        auto t = read_text_file(b.path + "/guid2lid");
        auto k = read_text_file(b.path + "/rest-tokens");
        std::lock_guard lk(mu);
        return t && *t == "0x10 1 1\n0x11 2 2\n" && k && *k == "tok\n" &&
               changed.count("guid2lid") && changed.count("rest-tokens");
      },
      std::chrono::seconds(10)))
      << "the standby's copy, and its on_changed for both";
  EXPECT_EQ(
      std::filesystem::status(b.path + "/rest-tokens").permissions() & std::filesystem::perms::all,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto st = standby->status();
  EXPECT_FALSE(st.degraded) << st.detail.dump();
  EXPECT_EQ(st.detail["documents"]["guid2lid"]["generation"], 2);

  // A standby writes nothing.
  auto refused = standby->write("guid2lid", "0x99 9 9\n");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kUnsupported);
  EXPECT_EQ(in_etcd(c, "guid2lid").first, 2u);

  // What etcd holds that weft did not write is left alone, and the copy stays.
  ASSERT_TRUE(c.txn({}, {EtcdOp::put("/weft/test/state/guid2lid", "{not json")}));
  ASSERT_TRUE(
      c.txn({}, {EtcdOp::put("/weft/test/state/nosuchdoc", R"({"generation":1,"text":"x"})")}));
  ASSERT_TRUE(
      c.txn({}, {EtcdOp::put("/weft/test/state/ports-down", R"({"generation":"1","text":7})")}));
  ASSERT_TRUE(master->write("unhealthy-ports", "0x1 1 1 why\n"));
  ASSERT_TRUE(wait_until([&] { return read_text_file(b.path + "/unhealthy-ports").has_value(); },
                         std::chrono::seconds(10)));
  EXPECT_EQ(*read_text_file(b.path + "/guid2lid"), "0x10 1 1\n0x11 2 2\n");
  EXPECT_FALSE(std::filesystem::exists(b.path + "/nosuchdoc"));
  EXPECT_FALSE(std::filesystem::exists(b.path + "/ports-down"));
}

TEST(StateStore, AMasterWhoseLeaseExpiredIsRefusedAndItsSuccessorWrites) {
  LocalEtcd etcd;
  Scratch a, b;
  auto old_master = open_store(etcd, a.path, "A", 2);
  auto next = open_store(etcd, b.path, "B", 2);
  old_master->set_master(true);
  old_master->start();
  next->start();
  ASSERT_TRUE(wait_until([&] { return holds(*old_master); }, std::chrono::seconds(10)));
  ASSERT_TRUE(old_master->write("partitions.rest.conf", "before\n"));
  EtcdClient c(etcd.config("/weft/test/"));
  // A no longer reaches its fabric (no fabric_contact): it stops renewing, and after
  // the lease's 2 s etcd drops the master key. B, master now, takes it.
  next->set_master(true);
  ASSERT_TRUE(wait_until([&] { return holds(*next); }, std::chrono::seconds(15),
                         [&] { next->fabric_contact(); }))
      << next->status().detail.dump();
  EXPECT_EQ(c.range("/weft/test/master")->kvs.at(0).value, "B");
  ASSERT_TRUE(next->write("partitions.rest.conf", "from B\n"));
  // A still thinks it is master: its write is refused, locally too, and etcd keeps B's.
  auto r = old_master->write("partitions.rest.conf", "from A after its lease\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnsupported);
  EXPECT_NE(r.error().message.find("refused"), std::string::npos) << r.error().message;
  EXPECT_EQ(in_etcd(c, "partitions.rest.conf").second, "from B\n");
  EXPECT_EQ(*read_text_file(a.path + "/partitions.rest.conf"), "before\n");
  // Fenced: A's next write is refused before it reaches etcd, not kept locally to be
  // written back later.
  auto again = old_master->write("guid2lid", "A's LIDs after its lease\n");
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("lost"), std::string::npos) << again.error().message;
  EXPECT_FALSE(std::filesystem::exists(a.path + "/guid2lid"));
  EXPECT_TRUE(old_master->status().detail["fenced"].get<bool>());
  // Nor does A take the key back without reaching its fabric, and B keeps it: a thing
  // that must not happen has no state to wait for, so this watches one lease and more.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  next->fabric_contact();
  EXPECT_FALSE(holds(*old_master));
  EXPECT_EQ(c.range("/weft/test/master")->kvs.at(0).value, "B");
  ASSERT_TRUE(next->write("partitions.rest.conf", "B again\n"));
  EXPECT_EQ(in_etcd(c, "partitions.rest.conf").second, "B again\n");
}

TEST(StateStore, WhatTheMasterWroteWhileEtcdWasAwayIsWrittenBackWhenItReturns) {
  LocalEtcd etcd;
  Scratch a, b;
  auto master = open_store(etcd, a.path, "A", 3);
  master->set_master(true);
  master->start();
  auto contact = [&] { master->fabric_contact(); };
  ASSERT_TRUE(wait_until([&] { return holds(*master); }, std::chrono::seconds(10), contact));
  ASSERT_TRUE(master->write("guid2lid", "one\n"));

  etcd.kill();
  ASSERT_TRUE(master->write("guid2lid", "two\n")) << "the master goes on with its local copy";
  ASSERT_TRUE(master->write("ports-down", "0x5 3 100 flapping\n"));
  EXPECT_EQ(*read_text_file(a.path + "/guid2lid"), "two\n");
  auto down = master->status();
  EXPECT_TRUE(down.degraded);
  EXPECT_EQ(down.detail["etcd"], "unreachable") << down.detail.dump();
  EXPECT_EQ(down.detail["unsynced"], 2);
  EXPECT_NE(down.detail.value("note", "").find("local copy"), std::string::npos);
  // The store's own record survives a restart of the SM.
  EXPECT_NE(read_text_file(a.path + "/state-store.meta")->find("guid2lid 2 0"), std::string::npos);

  ASSERT_TRUE(etcd.start());
  ASSERT_TRUE(
      wait_until([&] { return !master->status().degraded; }, std::chrono::seconds(20), contact))
      << master->status().detail.dump();
  EtcdClient c(etcd.config("/weft/test/"));
  EXPECT_EQ(in_etcd(c, "guid2lid"), (std::pair<uint64_t, std::string>{2, "two\n"}));
  EXPECT_EQ(in_etcd(c, "ports-down").second, "0x5 3 100 flapping\n");

  // Owed across a restart: the master writes while etcd is away and goes; a new
  // process on the same state directory keeps that copy as a standby, and writes it
  // back once it is master.
  etcd.kill();
  ASSERT_TRUE(master->write("guid2lid", "three\n"));
  master->stop();
  master.reset();
  ASSERT_TRUE(etcd.start());
  auto restarted = open_store(etcd, a.path, "A again", 3);
  restarted->start();
  // Its watch has read etcd once it reports the revision it read at.
  ASSERT_TRUE(wait_until([&] { return restarted->status().detail.contains("revision"); },
                         std::chrono::seconds(20)))
      << restarted->status().detail.dump();
  EXPECT_EQ(*read_text_file(a.path + "/guid2lid"), "three\n") << "a standby kept what it owes";
  EXPECT_EQ(in_etcd(c, "guid2lid").second, "two\n");
  restarted->set_master(true);
  ASSERT_TRUE(wait_until([&] { return in_etcd(c, "guid2lid").second == "three\n"; },
                         std::chrono::seconds(20), [&] { restarted->fabric_contact(); }))
      << restarted->status().detail.dump();
  restarted->set_master(false);
  ASSERT_TRUE(wait_until([&] { return !holds(*restarted); }, std::chrono::seconds(10)));

  // A standby that starts now gets all of it.
  auto standby = open_store(etcd, b.path, "B", 3);
  standby->start();
  EXPECT_TRUE(wait_until(
      [&] {
        auto t = read_text_file(b.path + "/guid2lid");
        return t && *t == "three\n";
      },
      std::chrono::seconds(10)));
  // And one whose etcd goes away says its copy is stale.
  etcd.kill();
  EXPECT_TRUE(wait_until([&] { return standby->status().degraded; }, std::chrono::seconds(10)));
  EXPECT_TRUE(standby->status().detail["stale"].get<bool>());
}

TEST(EtcdClient, SpeaksTlsWithTheCertificatesEtcdctlTakes) {
  LocalEtcd etcd(LocalEtcd::kTls);
  EtcdConfig cfg = etcd.config("/tls/");
  ASSERT_TRUE(cfg.tls());
  // etcd asks for a client certificate: without one, no answer.
  EtcdClient anonymous(cfg);
  auto refused = anonymous.range("/tls/x");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(etcd.endpoint()), std::string::npos);
  cfg.cert = etcd.client_cert();
  cfg.key = etcd.client_key();
  EtcdClient c(cfg);
  auto t = c.txn({EtcdCompare::absent("/tls/x")}, {EtcdOp::put("/tls/x", "over TLS")});
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(t->succeeded);
  EXPECT_EQ(c.range("/tls/x")->kvs.at(0).value, "over TLS");
  // A CA that did not sign etcd's certificate: refused, naming the endpoint.
  EtcdConfig wrong = cfg;
  wrong.cacert = etcd.client_cert();
  auto bad = EtcdClient(wrong).range("/tls/x");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::kUnreachable);

  // The state store over TLS: the master's write lands, fenced as ever.
  Scratch d;
  StateStoreOptions o;
  o.docs = kDocs;
  o.lease_s = 3;
  o.self = "tls-master";
  o.etcd.cacert = etcd.cacert();
  o.etcd.cert = etcd.client_cert();
  o.etcd.key = etcd.client_key();
  auto st = make_state_store(etcd.url("/tls"), d.path, o);
  ASSERT_TRUE(st) << st.error().message;
  (*st)->set_master(true);
  (*st)->start();
  ASSERT_TRUE(wait_until([&] { return holds(**st); }, std::chrono::seconds(10)))
      << (*st)->status().detail.dump();
  ASSERT_TRUE((*st)->write("guid2lid", "0x1 0x1 0x1\n"));
  auto r = c.range("/tls/state/guid2lid");
  ASSERT_TRUE(r && r->kvs.size() == 1);
  EXPECT_EQ(json::parse(r->kvs[0].value)["text"], "0x1 0x1 0x1\n");
}

TEST(EtcdClient, AuthenticatesAsEtcdctlDoesAndKeepsToItsPrefix) {
  LocalEtcd etcd;
  const std::string ctl = "ETCDCTL_API=3 etcdctl --endpoints " + etcd.endpoint() + " ";
  const std::string setup = "set -e; exec >'" + etcd.dir() + "/auth.log' 2>&1; " + ctl +
                            "user add root:rootpw; " + ctl + "user grant-role root root; " + ctl +
                            "user add weft:weftpw; " + ctl + "role add weft; " + ctl +
                            "role grant-permission weft --prefix=true readwrite /weft/; " + ctl +
                            "user grant-role weft weft; " + ctl + "auth enable";
  ASSERT_EQ(std::system(setup.c_str()), 0) << "etcdctl: see " << etcd.dir() << "/auth.log";
  EtcdConfig cfg = etcd.config("/weft/");
  EtcdClient nobody(cfg);
  EXPECT_FALSE(nobody.txn({}, {EtcdOp::put("/weft/x", "1")})) << "auth is on";
  cfg.user = "weft";
  cfg.password = "nope";
  auto wrong = EtcdClient(cfg).range("/weft/x");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("authentication failed"), std::string::npos)
      << wrong.error().message;
  cfg.password = "weftpw";
  EtcdClient c(cfg);
  auto put = c.txn({}, {EtcdOp::put("/weft/x", "1")});
  ASSERT_TRUE(put) << put.error().message;
  EXPECT_TRUE(put->succeeded);
  auto lease = c.grant(10);
  ASSERT_TRUE(lease) << lease.error().message;
  EXPECT_GT(*c.keepalive(*lease), 0);
  auto outside = c.txn({}, {EtcdOp::put("/other", "1")});
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message.find("permission denied"), std::string::npos)
      << outside.error().message;

  // etcd_user NAME:PASSWORD, as the store takes it from the config.
  Scratch d;
  StateStoreOptions o;
  o.docs = kDocs;
  o.lease_s = 3;
  o.self = "authed";
  o.etcd.user = "weft";
  o.etcd.password = "weftpw";
  auto st = make_state_store(etcd.url("/weft/auth"), d.path, o);
  ASSERT_TRUE(st);
  (*st)->set_master(true);
  (*st)->start();
  ASSERT_TRUE(wait_until([&] { return holds(**st); }, std::chrono::seconds(10)))
      << (*st)->status().detail.dump();
  ASSERT_TRUE((*st)->write("rest-tokens", "t\n"));
  EXPECT_EQ(c.range("/weft/auth/master")->kvs.at(0).value, "authed");
}

TEST(Fuzz, EtcdUrlsAndBase64NeverBreak) {
  std::mt19937 rng(17);
  const std::string base = "etcd://10.0.0.5:2379,etcd-b:2380/weft/fabric-a";
  for (int i = 0; i < 3000; ++i) {
    const std::string u = weft::testing::mutate(base, "etcd:/,.:0123456789abc \t%[]", rng);
    auto c = parse_etcd_url(u);
    if (c) {
      EXPECT_FALSE(c->endpoints.empty()) << u;
      EXPECT_EQ(c->prefix.back(), '/') << u;
    } else {
      EXPECT_NE(c.error().message.find("etcd://HOST:PORT"), std::string::npos) << u;
    }
    const std::string text = weft::testing::mutate("Zm9vYmFyYmF6", "A=+/z9", rng);
    auto d = EtcdClient::unb64(text);
    EXPECT_LE(d.value_or("").size(), 3 * text.size() / 4) << text;
  }
}

// What lands under PREFIX/state/ is read by every standby: mangled documents are
// ignored or taken as text (their readers check each line), never a crash, and the
// watch goes on.
TEST(Fuzz, MangledDocumentsInEtcdLeaveAStandbyStanding) {
  LocalEtcd etcd;
  Scratch d;
  auto standby = open_store(etcd, d.path, "B");
  standby->start();
  EtcdClient c(etcd.config("/weft/test/"));
  std::mt19937 rng(5);
  const std::string good = R"({"generation": 7, "writer": "A", "text": "0x10 0x1 0x1\n"})";
  for (int i = 0; i < 300; ++i) {
    const std::string v = weft::testing::mutate(good, "{}[]\":,0123456789aex\\ \n", rng);
    const std::string& doc = kDocs[i % kDocs.size()].name;
    ASSERT_TRUE(c.txn({}, {EtcdOp::put("/weft/test/state/" + doc, v)}));
  }
  ASSERT_TRUE(c.txn({}, {EtcdOp::put("/weft/test/state/guid2lid",
                                     R"({"generation": 900, "writer": "A", "text": "last\n"})")}));
  EXPECT_TRUE(wait_until(
      [&] {
        auto t = read_text_file(d.path + "/guid2lid");
        return t && *t == "last\n";
      },
      std::chrono::seconds(20)))
      << "the watch stopped following: " << standby->status().detail.dump();
  EXPECT_FALSE(standby->status().degraded) << standby->status().detail.dump();
}
