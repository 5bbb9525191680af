// The RoCE doctor: counter files as hosts' tools print them (ethtool -S, grep -H over
// the RDMA hw_counters, rdma statistic show in its three layouts), a healthy lossless run
// with no finding, each fault planted alone giving exactly its finding, and the pairs of
// snapshots it must refuse.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "../fuzz.hpp"
#include "test_data.hpp"
#include "weft/roce/doctor.hpp"
#include "weft/roce/fabric.hpp"

namespace weft::roce {
namespace {

namespace fs = std::filesystem;
using Counters = std::map<std::string, uint64_t>;

// ethtool -S as it prints (ethtool.c do_gstats): the header, then five spaces, the
// name, ": ", the value.
std::string ethtool_text(const Counters& c) {
  std::string s = "NIC statistics:\n";
  for (const auto& [k, v] : c) s += "     " + k + ": " + std::to_string(v) + "\n";
  return s;
}
// grep -H . /sys/class/infiniband/DEV/ports/1/hw_counters/*: path:value in glob order,
// with the lifespan file (a setting) among them.
std::string hw_text(const Counters& c, const std::string& dev = "mlx5_0") {
  Counters all = c;
  all["lifespan"] = 10;
  std::string s;
  for (const auto& [k, v] : all)
    s += "/sys/class/infiniband/" + dev + "/ports/1/hw_counters/" + k + ":" + std::to_string(v) +
         "\n";
  return s;
}
// rdma statistic show link DEV/1: one line (iproute2 before 6.7), one indented counter
// a line with a trailing space (6.7 on), or joined by "\" (-o).
std::string rdma_text(const Counters& c, int layout, const std::string& dev = "mlx5_0") {
  std::string s = "link " + dev + "/1 ";
  for (const auto& [k, v] : c) {
    if (layout == 1) s += "\n    ";
    if (layout == 2) s += "\\    ";
    s += k + " " + std::to_string(v) + " ";
  }
  return s + "\n";
}

// One host's counters: before, and what the interval adds.
struct Host {
  Counters eth, hw;  // the before values
  Counters eth_add, hw_add;
};

constexpr double kInterval = 10.0;

// A healthy lossless run on priority 3 (PFC on 3 only, storm protection there): 5 GB of
// RoCE each way, a few pauses, DCQCN marking and answering.
Host healthy(uint64_t seed) {
  Host h;
  for (int q = 0; q < 8; ++q)
    for (const char* c : {"rx_prio{}_bytes", "rx_prio{}_packets", "rx_prio{}_discards",
                          "tx_prio{}_bytes", "tx_prio{}_packets"}) {
      std::string n = c;
      n.replace(n.find("{}"), 2, std::to_string(q));
      h.eth[n] = seed * 1000 + uint64_t(q);
    }
  for (const char* c : {"rx_prio3_pause", "rx_prio3_pause_duration", "tx_prio3_pause",
                        "tx_prio3_pause_duration", "rx_prio3_pause_transition"})
    h.eth[c] = seed * 77;
  for (const char* c :
       {"rx_vport_rdma_unicast_bytes", "tx_vport_rdma_unicast_bytes",
        "rx_vport_rdma_unicast_packets", "tx_vport_rdma_unicast_packets", "rx_pause_ctrl_phy",
        "tx_pause_ctrl_phy", "rx_discards_phy", "rx_out_of_buffer", "rx_symbol_err_phy",
        "rx_crc_errors_phy", "tx_pause_storm_warning_events", "tx_pause_storm_error_events",
        "link_down_events_phy", "rx_packets", "tx_packets"})
    h.eth[c] = seed * 13;
  for (const char* c :
       {"rx_write_requests", "rx_read_requests", "out_of_buffer", "out_of_sequence",
        "duplicate_request", "rnr_nak_retry_err", "packet_seq_err", "implied_nak_seq_err",
        "local_ack_timeout_err", "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart",
        "roce_slow_restart_cnps", "roce_slow_restart_trans", "rp_cnp_ignored", "rp_cnp_handled",
        "np_ecn_marked_roce_packets", "np_cnp_sent", "rx_icrc_encapsulated"})
    h.hw[c] = seed * 5;
  const uint64_t gb5 = 5'000'000'000ull;
  h.eth_add = {{"rx_vport_rdma_unicast_bytes", gb5},
               {"tx_vport_rdma_unicast_bytes", gb5},
               {"rx_prio3_bytes", gb5 + 1'000'000},
               {"tx_prio3_bytes", gb5 + 1'000'000},
               {"rx_prio3_packets", 1'300'000},
               {"tx_prio3_packets", 1'300'000},
               {"rx_prio0_bytes", 20'000'000},
               {"tx_prio0_bytes", 20'000'000},
               {"rx_prio0_packets", 40'000},
               {"tx_prio0_packets", 40'000},
               {"rx_prio6_packets", 500},
               {"tx_prio6_packets", 500},
               {"rx_prio3_pause", 40},
               {"rx_prio3_pause_duration", 2'000},
               {"tx_prio3_pause", 12},
               {"tx_prio3_pause_duration", 600},
               {"rx_prio3_pause_transition", 40},
               {"rx_pause_ctrl_phy", 40},
               {"tx_pause_ctrl_phy", 12},
               {"rx_packets", 40'000},
               {"tx_packets", 40'000}};
  h.hw_add = {{"rx_write_requests", 1'200'000},
              {"np_ecn_marked_roce_packets", 900},
              {"np_cnp_sent", 500},
              {"rp_cnp_handled", 480}};
  return h;
}

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("weft-doctor-" + std::to_string(::getpid()) + "-" +
                                              std::to_string(std::random_device{}()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
  void write(const std::string& sub, const std::string& name, const std::string& text) const {
    fs::create_directories(dir / sub);
    std::ofstream(dir / sub / name) << text;
  }
  std::string at(const std::string& sub) const { return (dir / sub).string(); }
};

Counters plus(Counters c, const Counters& add) {
  for (const auto& [k, v] : add) c[k] += v;
  return c;
}

// Writes before/ and after/ for `hosts`, `rdma_layout` < 0: hw_counters files, else
// rdma_stat in that layout.
void write_pair(const Scratch& s, const std::map<std::string, Host>& hosts, int rdma_layout = -1) {
  for (const auto& [name, h] : hosts) {
    s.write("before", name + ".ethtool", ethtool_text(h.eth));
    s.write("after", name + ".ethtool", ethtool_text(plus(h.eth, h.eth_add)));
    if (rdma_layout < 0) {
      s.write("before", name + ".hw_counters", hw_text(h.hw));
      s.write("after", name + ".hw_counters", hw_text(plus(h.hw, h.hw_add)));
    } else {
      s.write("before", name + ".rdma_stat", rdma_text(h.hw, rdma_layout));
      s.write("after", name + ".rdma_stat", rdma_text(plus(h.hw, h.hw_add), rdma_layout));
    }
  }
}

// As weft roce doctor reads them: only the counters a diagnosis reads kept (`keep`).
Result<Diagnosis> run(const Scratch& s, const RoceProfile& p = default_roce_profile(),
                      CounterFilter keep = doctor_reads) {
  auto b = load_counter_dir(s.at("before"), keep);
  if (!b) return std::unexpected(b.error());
  auto a = load_counter_dir(s.at("after"), keep);
  if (!a) return std::unexpected(a.error());
  return diagnose(*b, *a, kInterval, p);
}

// (code, device, priority) of each finding.
std::set<std::tuple<std::string, std::string, int>> codes(const Diagnosis& d) {
  std::set<std::tuple<std::string, std::string, int>> out;
  for (const auto& f : d.findings) out.insert({f.code, f.device, f.priority});
  return out;
}

std::map<std::string, Host> two_hosts() {
  return {{"h1", healthy(1)}, {"h2", healthy(2)}};
}

TEST(RoceDoctor, AHealthyLosslessRunHasNoFinding) {
  for (int layout : {-1, 0, 1, 2}) {
    Scratch s;
    write_pair(s, two_hosts(), layout);
    auto d = run(s);
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_TRUE(d->findings.empty()) << layout << "\n" << render_diagnosis(*d);
    EXPECT_FALSE(d->any_error());
  }
}

TEST(RoceDoctor, TheParsersReadTheToolsLayouts) {
  auto e = parse_ethtool_stats(ethtool_text({{"rx_prio3_pause", 1523}}), "h1.ethtool");
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->values.at("rx_prio3_pause"), 1523u);
  auto hw = parse_hw_counters(hw_text({{"np_cnp_sent", 10284520}}, "mlx5_2"), "h1.hw_counters");
  ASSERT_TRUE(hw) << hw.error().message;
  EXPECT_EQ(hw->port, "mlx5_2/1");
  EXPECT_EQ(hw->values.at("np_cnp_sent"), 10284520u);
  EXPECT_FALSE(hw->values.count("lifespan")) << "a setting, not a counter";
  for (int layout : {0, 1, 2}) {
    auto r = parse_rdma_stat(rdma_text({{"out_of_sequence", 44}, {"np_cnp_sent", 7}}, layout),
                             "h1.rdma_stat");
    ASSERT_TRUE(r) << layout << ": " << r.error().message;
    EXPECT_EQ(r->port, "mlx5_0/1");
    EXPECT_EQ(r->values,
              (std::map<std::string, uint64_t>{{"np_cnp_sent", 7}, {"out_of_sequence", 44}}));
  }
  // Bad input names the file and line.
  auto bad = parse_ethtool_stats("NIC statistics:\n     rx_packets: 12\n     tx_packets: many\n",
                                 "h1.ethtool");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("h1.ethtool:3: ", 0), 0u) << bad.error().message;
  EXPECT_FALSE(parse_ethtool_stats("rx_packets: 1\n", "x"));  // no header: not ethtool -S
  auto two = parse_hw_counters(
      "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/a:1\n"
      "/sys/class/infiniband/mlx5_0/ports/2/hw_counters/b:1\n",
      "h1.hw_counters");
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message.find("h1.hw_counters:2: a second port"), std::string::npos)
      << two.error().message;
  EXPECT_FALSE(parse_rdma_stat("link mlx5_0/1 np_cnp_sent\n", "x"));
  EXPECT_FALSE(parse_rdma_stat("link mlx5_0/1 a 1\nlink mlx5_1/1 a 2\n", "x"));
  EXPECT_FALSE(parse_ethtool_stats("NIC statistics:\n     a: 1\n     a: 2\n", "x"));
}

TEST(RoceDoctor, FuzzedFilesParseOrAreRefusedNeverCrash) {
  std::mt19937 rng(7);
  const std::string eth = ethtool_text(healthy(1).eth), hw = hw_text(healthy(1).hw),
                    rd = rdma_text(healthy(1).hw, 1);
  size_t refused = 0;
  for (int i = 0; i < 3000; ++i) {
    refused += !parse_ethtool_stats(testing::mutate(eth, ": \n0x9_/", rng), "f");
    refused += !parse_hw_counters(testing::mutate(hw, ": \n0x9_/", rng), "f");
    refused += !parse_rdma_stat(testing::mutate(rd, ": \n0x9_/\\", rng), "f");
  }
  EXPECT_GT(refused, 0u);
}

// Each fault alone: exactly its finding, naming device and priority.
struct Fault {
  const char* name;
  std::function<void(std::map<std::string, Host>&)> plant;
  std::set<std::tuple<std::string, std::string, int>> want;
};

TEST(RoceDoctor, EachFaultPlantedAloneGivesExactlyItsFinding) {
  const std::vector<Fault> faults = {
      {"storm events",
       [](auto& h) { h["h1"].eth_add["tx_pause_storm_error_events"] = 2; },
       {{"pfc_storm", "h1", -1}}},
      {"paused all interval, sending nothing",
       [](auto& h) {
         auto& a = h["h2"].eth_add;
         a["rx_prio3_pause_duration"] = 9'500'000;  // of 10 s, in microseconds
         a["rx_prio3_pause"] = 200'000;
         for (const char* c : {"tx_prio3_bytes", "tx_prio3_packets", "tx_vport_rdma_unicast_bytes"})
           a.erase(c);
       },
       {{"pfc_storm", "h2", 3}}},
      {"pause on priority 0 (PFC on there too)",
       [](auto& h) {
         for (const char* c : {"rx_prio0_pause", "tx_prio0_pause"}) h["h1"].eth[c] = 5;
         h["h1"].eth_add["rx_prio0_pause"] = 300;
       },
       {{"pause_wrong_priority", "h1", 0}}},
      {"global pause on",
       [](auto& h) {
         h["h2"].eth["rx_global_pause"] = 0;
         h["h2"].eth["tx_global_pause"] = 0;
         h["h2"].eth_add["tx_global_pause"] = 90;
       },
       {{"global_pause", "h2", -1}}},
      {"PFC off on priority 3",
       [](auto& h) {
         for (const char* c : {"rx_prio3_pause", "rx_prio3_pause_duration", "tx_prio3_pause",
                               "tx_prio3_pause_duration", "rx_prio3_pause_transition"}) {
           h["h1"].eth.erase(c);
           h["h1"].eth_add.erase(c);
         }
       },
       {{"pfc_off", "h1", 3}}},
      {"RoCE on priority 0",
       [](auto& h) {
         auto& a = h["h1"].eth_add;
         a["tx_prio0_bytes"] = a["tx_prio3_bytes"];
         a["tx_prio3_bytes"] = 1'000'000;
       },
       {{"roce_lossy", "h1", 3}}},
      {"no ECN marks under heavy PFC",
       [](auto& h) {
         for (auto& [n, x] : h) {
           x.hw_add.erase("np_ecn_marked_roce_packets");
           x.hw_add.erase("np_cnp_sent");
           x.hw_add.erase("rp_cnp_handled");
         }
         h["h1"].eth_add["rx_prio3_pause"] = 50'000;
       },
       {{"no_ecn_marking", "", 3}}},
      {"NP off",
       [](auto& h) {
         for (auto& [n, x] : h) x.hw_add.erase("rp_cnp_handled");
         h["h2"].hw_add.erase("np_cnp_sent");
         h["h1"].hw_add.erase("np_cnp_sent");
       },
       {{"dcqcn_np_inactive", "h1", 3}, {"dcqcn_np_inactive", "h2", 3}}},
      {"RP off",
       [](auto& h) {
         h["h1"].hw_add.erase("rp_cnp_handled");
         h["h1"].hw_add["rp_cnp_ignored"] = 480;
       },
       {{"dcqcn_rp_inactive", "h1", 3}}},
      {"CNPs lost on the way",
       [](auto& h) {
         for (auto& [n, x] : h) x.hw_add.erase("rp_cnp_handled");
       },
       {{"cnp_lost", "", 6}}},
      {"drops on the lossless priority",
       [](auto& h) { h["h2"].eth_add["rx_prio3_discards"] = 31; },
       {{"lossless_drops", "h2", 3}}},
      {"retransmission",
       [](auto& h) {
         h["h2"].hw_add["out_of_sequence"] = 17;
         h["h2"].hw_add["duplicate_request"] = 4;
       },
       {{"retransmission", "h2", -1}}},
      {"link errors",
       [](auto& h) { h["h1"].eth_add["rx_symbol_err_phy"] = 9; },
       {{"link_errors", "h1", -1}}},
      {"drops with no PFC",
       [](auto& h) {
         auto& a = h["h2"].eth_add;
         a["rx_discards_phy"] = 400;
         for (const char* c : {"rx_prio3_pause", "tx_prio3_pause", "rx_prio3_pause_duration",
                               "tx_prio3_pause_duration", "rx_prio3_pause_transition"})
           a.erase(c);
       },
       {{"roce_lossy", "h2", 3}}},
      {"retransmission over a corrupting link",
       [](auto& h) {
         h["h1"].hw_add["out_of_sequence"] = 30;
         h["h1"].eth_add["rx_crc_errors_phy"] = 30;
       },
       {{"retransmission", "h1", -1}, {"link_errors", "h1", -1}}},
      {"slow restart",
       [](auto& h) { h["h1"].hw_add["roce_slow_restart"] = 3; },
       {{"slow_restart", "h1", -1}}},
      {"receiver not ready",
       [](auto& h) { h["h2"].hw_add["rnr_nak_retry_err"] = 8; },
       {{"host_rnr", "h2", -1}}},
      {"host out of buffers",
       [](auto& h) { h["h1"].hw_add["out_of_buffer"] = 120; },
       {{"host_out_of_buffer", "h1", -1}}},
  };
  for (const auto& f : faults) {
    Scratch s;
    auto hosts = two_hosts();
    f.plant(hosts);
    write_pair(s, hosts);
    auto d = run(s);
    ASSERT_TRUE(d) << f.name << ": " << d.error().message;
    EXPECT_EQ(codes(*d), f.want) << f.name << "\n" << render_diagnosis(*d);
    auto whole = run(s, default_roce_profile(), nullptr);  // every counter kept: the same
    ASSERT_TRUE(whole) << f.name << ": " << whole.error().message;
    EXPECT_EQ(codes(*whole), f.want) << f.name;
    for (const auto& x : d->findings) {
      EXPECT_FALSE(x.evidence.empty()) << f.name;
      EXPECT_FALSE(x.advice.empty()) << f.name;
      if (!x.device.empty()) {
        EXPECT_EQ(x.port, "mlx5_0/1") << f.name;
      }
    }
    const bool error = f.want.size() && std::get<0>(*f.want.begin()) != "host_rnr" &&
                       std::get<0>(*f.want.begin()) != "host_out_of_buffer" &&
                       std::get<0>(*f.want.begin()) != "slow_restart" &&
                       std::get<0>(*f.want.begin()) != "no_ecn_marking" &&
                       std::get<0>(*f.want.begin()) != "cnp_lost";
    EXPECT_EQ(d->any_error(), error) << f.name;
  }
}

TEST(RoceDoctor, TheEvidenceCarriesTheDeltas) {
  Scratch s;
  auto hosts = two_hosts();
  hosts["h2"].eth_add["rx_prio3_discards"] = 31;
  write_pair(s, hosts);
  auto d = run(s);
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->findings.size(), 1u);
  EXPECT_EQ(d->findings[0].evidence.at("rx_prio3_discards"), 31);
  const auto j = diagnosis_json(*d);
  EXPECT_EQ(j.at("findings").at(0).at("code"), "lossless_drops");
  EXPECT_EQ(j.at("findings").at(0).at("severity"), "error");
  EXPECT_EQ(j.at("findings").at(0).at("priority"), 3);
  EXPECT_EQ(j.at("findings").at(0).at("device"), "h2");
}

TEST(RoceDoctor, RetransmissionCitesTheLinkErrorsOfItsPort) {
  Scratch s;
  auto hosts = two_hosts();
  hosts["h1"].hw_add["out_of_sequence"] = 30;
  hosts["h1"].eth_add["rx_crc_errors_phy"] = 30;
  hosts["h2"].eth_add["rx_prio3_discards"] = 5;
  hosts["h2"].eth_add["rx_discards_phy"] = 5;
  write_pair(s, hosts);
  auto d = run(s);
  ASSERT_TRUE(d) << d.error().message;
  for (const auto& f : d->findings) {
    if (f.code == "retransmission") {
      EXPECT_EQ(f.evidence.at("rx_crc_errors_phy"), 30);
      EXPECT_NE(f.advice.find("link_errors"), std::string::npos);
    }
    if (f.code == "lossless_drops") {
      EXPECT_EQ(f.evidence.at("rx_discards_phy"), 5);
    }
  }
  EXPECT_EQ(d->findings.size(), 3u) << render_diagnosis(*d);
}

TEST(RoceDoctor, AMissingCounterIsSaidOnceAndItsDiagnosesCannotTell) {
  Scratch s;
  auto hosts = two_hosts();
  for (auto* c : {&hosts["h1"].hw, &hosts["h1"].hw_add}) {
    c->erase("np_cnp_sent");
    c->erase("np_ecn_marked_roce_packets");
  }
  write_pair(s, hosts);
  auto d = run(s);
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->findings.size(), 1u) << render_diagnosis(*d);
  const auto& f = d->findings[0];
  EXPECT_EQ(f.code, "cannot_tell");
  EXPECT_EQ(f.device, "h1");
  EXPECT_EQ(f.evidence.at("missing"),
            (nlohmann::json{"np_cnp_sent", "np_ecn_marked_roce_packets"}));
  EXPECT_EQ(f.evidence.at("cannot_tell"), (nlohmann::json{"cnp_lost", "dcqcn_np_inactive"}));
  EXPECT_FALSE(d->any_error());
}

TEST(RoceDoctor, A32BitCounterThatWrappedIsADeltaNotAReset) {
  Scratch s;
  auto hosts = two_hosts();
  hosts["h1"].hw["out_of_buffer"] = 0xffffff00u;
  write_pair(s, hosts);
  // 0x200 later: past 2^32, where the 32-bit counter starts again from 0.
  auto after = plus(hosts["h1"].hw, hosts["h1"].hw_add);
  after["out_of_buffer"] = 0x100;
  s.write("after", "h1.hw_counters", hw_text(after));
  auto d = run(s);
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->findings.size(), 1u) << render_diagnosis(*d);
  EXPECT_EQ(d->findings[0].code, "host_out_of_buffer");
  EXPECT_EQ(d->findings[0].evidence.at("out_of_buffer"), 0x200);
}

TEST(RoceDoctor, PairsThatCannotBeComparedAreRefused) {
  {  // swapped: counters go down
    Scratch s;
    write_pair(s, two_hosts());
    auto b = load_counter_dir(s.at("before"));
    auto a = load_counter_dir(s.at("after"));
    ASSERT_TRUE(a && b);
    auto d = diagnose(*a, *b, kInterval, default_roce_profile());
    ASSERT_FALSE(d);
    EXPECT_NE(d.error().message.find("went down"), std::string::npos) << d.error().message;
    EXPECT_NE(d.error().message.find("swapped"), std::string::npos) << d.error().message;
  }
  {  // two different ports
    Scratch s;
    auto hosts = two_hosts();
    write_pair(s, hosts);
    s.write("after", "h2.hw_counters", hw_text(plus(hosts["h2"].hw, hosts["h2"].hw_add), "mlx5_3"));
    auto d = run(s);
    ASSERT_FALSE(d);
    EXPECT_NE(d.error().message.find("h2.hw_counters: the before snapshot is of mlx5_0/1, the "
                                     "after one of mlx5_3/1"),
              std::string::npos)
        << d.error().message;
  }
  {  // a file in one directory only
    Scratch s;
    write_pair(s, two_hosts());
    s.write("after", "h3.ethtool", ethtool_text(healthy(3).eth));
    auto d = run(s);
    ASSERT_FALSE(d);
    EXPECT_NE(d.error().message.find("h3.ethtool has no pair in"), std::string::npos)
        << d.error().message;
  }
  {  // a file of no known kind
    Scratch s;
    write_pair(s, two_hosts());
    s.write("before", "h1.txt", "x");
    auto b = load_counter_dir(s.at("before"));
    ASSERT_FALSE(b);
    EXPECT_NE(b.error().message.find("h1.txt: not DEVICE.ethtool"), std::string::npos)
        << b.error().message;
  }
  {  // no interval
    Scratch s;
    write_pair(s, two_hosts());
    auto b = load_counter_dir(s.at("before"));
    auto a = load_counter_dir(s.at("after"));
    EXPECT_FALSE(diagnose(*b, *a, 0, default_roce_profile()));
  }
}

// ---- switches: sonic-utilities' tables, as tabulate's "simple" layout prints them ----

// Right-aligned columns two spaces apart, a dash rule under the header.
std::string tabulate(const std::vector<std::string>& head,
                     const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    w[c] = head[c].size();
    for (const auto& r : rows) w[c] = std::max(w[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cells.size(); ++c)
      s += (c ? "  " : "") + std::string(w[c] - cells[c].size(), ' ') + cells[c];
    return s + "\n";
  };
  std::string s = line(head);
  for (size_t c = 0; c < head.size(); ++c) s += (c ? "  " : "") + std::string(w[c], '-');
  s += "\n";
  for (const auto& r : rows) s += line(r);
  return s;
}

std::string commas(uint64_t v) {
  std::string d = std::to_string(v), out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i && (d.size() - i) % 3 == 0) out += ',';
    out += d[i];
  }
  return out;
}

// A SONiC leaf: per port, PFC frames rx/tx per priority, queue counters, watchdog stats.
struct Leaf {
  std::map<std::string, std::array<uint64_t, 8>> rx_pfc, tx_pfc;
  std::map<std::pair<std::string, std::string>, std::array<uint64_t, 4>>
      queues;  // pkts..drop_bytes
  std::map<std::string, std::array<uint64_t, 6>>
      wd;  // PORT:Q -> detected, restored, tx ok/drop, rx ok/drop
  std::map<std::string, std::string> wd_state;
  std::map<std::pair<std::string, std::string>, uint64_t> ecn;  // ECN-marked packets a queue
  std::map<std::string, std::array<uint64_t, 8>> pg_drop;       // ingress drops a PG
  std::map<std::string, std::array<uint64_t, 8>> headroom;      // XOFF headroom watermark a PG
  // pg-drop and watermarkstat: a title line, then Port and PG0..PG7 (no commas).
  static std::string pg_text(const char* title,
                             const std::map<std::string, std::array<uint64_t, 8>>& m) {
    std::vector<std::string> head = {"Port"};
    for (int g = 0; g < 8; ++g) head.push_back("PG" + std::to_string(g));
    std::vector<std::vector<std::string>> rows;
    for (const auto& [port, v] : m) {
      rows.push_back({port});
      for (uint64_t x : v) rows.back().push_back(std::to_string(x));
    }
    return std::string(title) + "\n" + tabulate(head, rows);
  }
  std::string pg_drop_text() const { return pg_text("Ingress PG dropped packets:", pg_drop); }
  std::string headroom_text() const { return pg_text("Ingress headroom per PG:", headroom); }
  std::string wred_text() const {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [k, v] : ecn)
      rows.push_back({k.first, k.second, "0", "0", std::to_string(v), std::to_string(v * 1000)});
    return tabulate(
        {"Port", "TxQ", "WredDrp/pkts", "WredDrp/bytes", "EcnMarked/pkts", "EcnMarked/bytes"},
        rows);
  }
  std::string pfc_text() const {
    std::string s = "Last cached time was 2026-12-06T15:00:00.000000\n";  // after sonic-clear
    for (const auto* m : {&rx_pfc, &tx_pfc}) {
      std::vector<std::string> head = {m == &rx_pfc ? "Port Rx" : "Port Tx"};
      for (int q = 0; q < 8; ++q) head.push_back("PFC" + std::to_string(q));
      std::vector<std::vector<std::string>> rows;
      for (const auto& [port, v] : *m) {
        rows.push_back({port});
        for (uint64_t x : v) rows.back().push_back(commas(x));
      }
      rows.push_back({"Ethernet-BP256", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A"});
      s += tabulate(head, rows) + "\n";
    }
    return s;
  }
  std::string queue_text() const {
    std::string s;
    std::string last;
    std::vector<std::vector<std::string>> rows;
    auto flush = [&] {
      if (rows.empty()) return;
      s += "For namespace :\n" +
           tabulate({"Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Drop/bytes"},
                    rows) +
           "\n";
      rows.clear();
    };
    for (const auto& [k, v] : queues) {
      if (k.first != last) flush();
      last = k.first;
      rows.push_back({k.first, k.second, std::to_string(v[0]), std::to_string(v[1]),
                      std::to_string(v[2]), std::to_string(v[3])});
    }
    flush();
    return s;
  }
  std::string pfcwd_text() const {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [q, v] : wd) {
      if (std::all_of(v.begin(), v.end(), [](uint64_t x) { return x == 0; })) continue;  // no -e
      auto pair = [](uint64_t a, uint64_t b) {
        return std::to_string(a) + "/" + std::to_string(b);
      };
      rows.push_back(
          {q, wd_state.at(q), pair(v[0], v[1]), pair(v[2], v[3]), pair(v[4], v[5]), "0/0", "0/0"});
    }
    return tabulate({"QUEUE", "STATUS", "STORM DETECTED/RESTORED", "TX OK/DROP", "RX OK/DROP",
                     "TX LAST OK/DROP", "RX LAST OK/DROP"},
                    rows);
  }
};

Leaf healthy_leaf() {
  Leaf l;
  for (const char* p : {"Ethernet0", "Ethernet4", "Ethernet48"}) {
    l.rx_pfc[p] = {0, 0, 0, 1000, 0, 0, 0, 0};
    l.tx_pfc[p] = {0, 0, 0, 2000, 0, 0, 0, 0};
    for (int q = 0; q < 8; ++q) l.queues[{p, "UC" + std::to_string(q)}] = {5000, 500000, 0, 0};
    l.queues[{p, "MC8"}] = {10, 1000, 3, 300};  // multicast drops: no lossless queue
    l.ecn[{p, "UC3"}] = 50;
    const std::string wq = std::string(p) + ":3";
    l.wd[wq] = {0, 0, 100, 0, 100, 0};
    l.wd_state[wq] = "operational";
    l.pg_drop[p] = {7, 0, 0, 0, 0, 0, 0, 0};       // lossy PG 0 drops: by design
    l.headroom[p] = {0, 0, 0, 20480, 0, 0, 0, 0};  // PG 3 paused, within its headroom
  }
  return l;
}

Leaf later(Leaf l) {
  for (auto& [p, v] : l.tx_pfc) v[3] += 1500;
  for (auto& [p, v] : l.rx_pfc) v[3] += 10;
  for (auto& [k, v] : l.queues) v[0] += 40000, v[1] += 40000000;
  for (auto& [k, v] : l.ecn) v += 300;
  for (auto& [k, v] : l.pg_drop) v[0] += 5;
  return l;
}

// The same leaf as SONiC's COUNTERS_DB holds it: name maps to oids, SAI fields as decimal
// strings; `dump`: as sonic-db-dump prints it ({"type": "hash", "value": {...}}), else
// as sonic-utilities' mock counters_db.json has it ({KEY: {FIELD: VALUE}}).
std::string counters_db_text(const Leaf& l, bool dump) {
  nlohmann::json db = nlohmann::json::object();
  auto hash = [&](const std::string& key, const nlohmann::json& h) {
    db[key] =
        dump ? nlohmann::json{{"type", "hash"}, {"ttl", -0.001}, {"expireat", 0}, {"value", h}} : h;
  };
  nlohmann::json ports = nlohmann::json::object(), queues = nlohmann::json::object(),
                 types = nlohmann::json::object();
  int next = 0x100;
  auto oid = [&] { return fmt::format("oid:0x{:x}", next++); };
  for (const auto& [port, rx] : l.rx_pfc) {
    const std::string o = oid();
    ports[port] = o;
    nlohmann::json h = nlohmann::json::object();
    for (int q = 0; q < 8; ++q) {
      h[fmt::format("SAI_PORT_STAT_PFC_{}_RX_PKTS", q)] = std::to_string(rx[size_t(q)]);
      h[fmt::format("SAI_PORT_STAT_PFC_{}_TX_PKTS", q)] =
          std::to_string(l.tx_pfc.at(port)[size_t(q)]);
    }
    h["SAI_PORT_STAT_IF_IN_OCTETS"] = "123";
    hash("COUNTERS:" + o, h);
  }
  for (const auto& [k, v] : l.queues) {
    const std::string o = oid();
    const bool mc = k.second.starts_with("MC");
    const std::string index = k.second.substr(2);
    queues[k.first + ":" + index] = o;
    types[o] = mc ? "SAI_QUEUE_TYPE_MULTICAST" : "SAI_QUEUE_TYPE_UNICAST";
    nlohmann::json h = {{"SAI_QUEUE_STAT_PACKETS", std::to_string(v[0])},
                        {"SAI_QUEUE_STAT_BYTES", std::to_string(v[1])},
                        {"SAI_QUEUE_STAT_DROPPED_PACKETS", std::to_string(v[2])},
                        {"SAI_QUEUE_STAT_DROPPED_BYTES", std::to_string(v[3])}};
    if (auto e = l.ecn.find(k); e != l.ecn.end())
      h["SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"] = std::to_string(e->second);
    if (auto w = l.wd.find(k.first + ":" + index); w != l.wd.end()) {
      const auto& x = w->second;
      h["PFC_WD_STATUS"] = l.wd_state.at(w->first);
      h["PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED"] = std::to_string(x[0]);
      h["PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED"] = std::to_string(x[1]);
      h["PFC_WD_QUEUE_STATS_TX_PACKETS"] = std::to_string(x[2]);
      h["PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS"] = std::to_string(x[3]);
      h["PFC_WD_QUEUE_STATS_RX_PACKETS"] = std::to_string(x[4]);
      h["PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS"] = std::to_string(x[5]);
    }
    hash("COUNTERS:" + o, h);
  }
  nlohmann::json pgs = nlohmann::json::object();
  for (const auto& [port, drops] : l.pg_drop)
    for (int g = 0; g < 8; ++g) {
      const std::string o = oid();
      pgs[port + ":" + std::to_string(g)] = o;
      hash("COUNTERS:" + o,
           {{"SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS", std::to_string(drops[size_t(g)])}});
      const std::string wm = std::to_string(l.headroom.at(port)[size_t(g)]);
      hash("PERSISTENT_WATERMARKS:" + o,
           {{"SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES", wm},
            {"SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES", "99999"}});
      // The user's table, cleared more often: the persistent one is the one read.
      hash("USER_WATERMARKS:" + o,
           {{"SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES", "1"}});
    }
  hash("COUNTERS_PORT_NAME_MAP", ports);
  hash("COUNTERS_QUEUE_NAME_MAP", queues);
  hash("COUNTERS_QUEUE_TYPE_MAP", types);
  hash("COUNTERS_PG_NAME_MAP", pgs);
  return db.dump(2);
}

// form 0: the three CLI tables; 1: COUNTERS_DB as the mock has it; 2: as sonic-db-dump.
void write_leaf(const Scratch& s, const std::string& dir, const Leaf& l, int form = 0) {
  if (form) {
    s.write(dir, "leaf1.counters_db", counters_db_text(l, form == 2));
    return;
  }
  s.write(dir, "leaf1.pfc", l.pfc_text());
  s.write(dir, "leaf1.queue", l.queue_text());
  s.write(dir, "leaf1.pfcwd", l.pfcwd_text());
  s.write(dir, "leaf1.wred", l.wred_text());
  s.write(dir, "leaf1.pg_drop", l.pg_drop_text());
  s.write(dir, "leaf1.pg_headroom", l.headroom_text());
}

TEST(RoceDoctor, SonicTablesParseAsTheCommandsPrintThem) {
  const Leaf l = healthy_leaf();
  auto pfc = parse_sonic_pfc(l.pfc_text(), "leaf1.pfc");
  ASSERT_TRUE(pfc) << pfc.error().message;
  EXPECT_EQ(pfc->values.at("Ethernet0|tx_pfc3"), 2000u);  // printed "2,000"
  EXPECT_EQ(pfc->values.at("Ethernet4|rx_pfc3"), 1000u);
  EXPECT_FALSE(pfc->values.count("Ethernet-BP256|rx_pfc0")) << "N/A is no counter";
  auto q = parse_sonic_queue(l.queue_text(), "leaf1.queue");
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->values.at("Ethernet48|MC8|drop_bytes"), 300u);
  auto wred = parse_sonic_wred(l.wred_text(), "leaf1.wred");
  ASSERT_TRUE(wred) << wred.error().message;
  EXPECT_EQ(wred->values.at("Ethernet4|UC3|ecn_marked"), 50u);
  auto wd = parse_sonic_pfcwd(l.pfcwd_text(), "leaf1.pfcwd");
  ASSERT_TRUE(wd) << wd.error().message;
  EXPECT_EQ(wd->values.at("Ethernet4:3|rx_ok"), 100u);
  EXPECT_EQ(wd->states.at("Ethernet4:3"), "operational");
  // A row a cell short, and a header that is not the command's: file and line named.
  std::string text = l.queue_text();
  text.replace(text.find("   500000"), 9, "");  // the UC0 row, under MC8's
  auto bad = parse_sonic_queue(text, "leaf1.queue");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("leaf1.queue:5: 5 cells in a table of 6 columns"),
            std::string::npos)
      << bad.error().message;
  auto wrong = parse_sonic_pfc(l.queue_text(), "leaf1.pfc");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("leaf1.pfc:2: the columns are not \"Port Rx\""),
            std::string::npos)
      << wrong.error().message;
  EXPECT_FALSE(parse_sonic_pfcwd("nothing here\n", "leaf1.pfcwd"));
  auto pg = parse_sonic_pg_drop(l.pg_drop_text(), "leaf1.pg_drop");
  ASSERT_TRUE(pg) << pg.error().message;
  EXPECT_EQ(pg->values.at("Ethernet48|PG0|drop_pkts"), 7u);
  EXPECT_EQ(pg->values.at("Ethernet48|PG3|drop_pkts"), 0u);
  auto wm = parse_sonic_pg_headroom(l.headroom_text(), "leaf1.pg_headroom");
  ASSERT_TRUE(wm) << wm.error().message;
  EXPECT_TRUE(wm->values.empty()) << "a watermark is a level, not a counter";
  EXPECT_EQ(wm->levels.at("Ethernet4|PG3|headroom_wm"), 20480u);
  // The shared pool's watermark table looks the same but for its title: refused.
  std::string shared = l.headroom_text();
  shared.replace(0, shared.find('\n'), "Ingress shared pool occupancy per PG:");
  auto not_headroom = parse_sonic_pg_headroom(shared, "leaf1.pg_headroom");
  ASSERT_FALSE(not_headroom);
  EXPECT_NE(not_headroom.error().message.find(
                "leaf1.pg_headroom:1: the title is \"Ingress shared pool occupancy per PG:\", "
                "not \"Ingress headroom per PG:\""),
            std::string::npos)
      << not_headroom.error().message;
  // A table with that title and no rows (no port polled yet) is refused as well.
  auto empty = parse_sonic_pg_headroom(
      "Ingress shared pool occupancy per PG:\n     Port    PG0\n---------  -----\n",
      "leaf1.pg_headroom");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("leaf1.pg_headroom:1: the title is"), std::string::npos)
      << empty.error().message;
  // COUNTERS_DB: the same counters from the SAI fields, in either JSON shape.
  for (bool dump : {false, true}) {
    auto db = parse_counters_db(counters_db_text(l, dump), "leaf1.counters_db");
    ASSERT_TRUE(db) << db.error().message;
    for (const auto* part : {&*pfc, &*q, &*wd, &*pg})
      for (const auto& [k, v] : part->values) EXPECT_EQ(db->values.at(k), v) << k;
    EXPECT_EQ(db->levels, wm->levels);
    for (const auto& [k, v] : wred->values)
      if (k.ends_with("|ecn_marked")) {
        EXPECT_EQ(db->values.at(k), v) << k;
      }
    EXPECT_EQ(db->states, wd->states);
  }
  std::string broken = counters_db_text(l, false);
  const std::string cell = "\"SAI_QUEUE_STAT_BYTES\": \"500000\"";
  broken.replace(broken.find(cell), cell.size(), "\"SAI_QUEUE_STAT_BYTES\": \"lots\"");
  auto refused = parse_counters_db(broken, "leaf1.counters_db");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("SAI_QUEUE_STAT_BYTES: \"lots\" is not a count"),
            std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(parse_counters_db("{\"a\": 1}", "x"));
  EXPECT_FALSE(parse_counters_db("[1, 2", "x"));
  std::mt19937 rng(11);
  const std::string db_text = counters_db_text(l, true);
  for (int i = 0; i < 2000; ++i) {
    (void)parse_sonic_pfc(testing::mutate(l.pfc_text(), " -,/N\n0", rng), "f");
    (void)parse_sonic_queue(testing::mutate(l.queue_text(), " -,/N\n0", rng), "f");
    (void)parse_sonic_pfcwd(testing::mutate(l.pfcwd_text(), " -,/N\n0:", rng), "f");
    (void)parse_sonic_pg_drop(testing::mutate(l.pg_drop_text(), " -,/N\nPG0:", rng), "f");
    (void)parse_sonic_pg_headroom(testing::mutate(l.headroom_text(), " -,/N\nPG0:", rng), "f");
    (void)parse_counters_db(testing::mutate(db_text, "{}\":,0x[]", rng), "f");
  }
}

// Two hosts under leaf1, the fabric saying which port each hangs on.
const char* const kLeafFabric = R"(switches:
  - {name: leaf1, os: sonic}
hosts:
  - {name: h1, ports: [{ifname: eth0, rdma: mlx5_0}]}
  - {name: h2, ports: [{ifname: eth0, rdma: mlx5_0}]}
links:
  - [leaf1:Ethernet0, h1:eth0, 100G, 3m]
  - [leaf1:Ethernet4, h2:eth0, 100G, 3m]
)";

TEST(RoceDoctor, SwitchFaultsPlantedAloneAndWhoPausesWhom) {
  auto fabric = parse_roce_fabric(kLeafFabric, "fabric.yaml");
  ASSERT_TRUE(fabric) << fabric.error().message;
  const std::vector<std::pair<const char*, std::function<void(Leaf&)>>> faults = {
      {"healthy", [](Leaf&) {}},
      {"storm",
       [](Leaf& l) {
         l.wd["Ethernet4:3"][0] += 1;
         l.wd["Ethernet4:3"][3] += 700;
         l.wd_state["Ethernet4:3"] = "stormed";
       }},
      {"pause on priority 0", [](Leaf& l) { l.rx_pfc["Ethernet48"][0] += 25; }},
      {"drops on the lossless queue",
       [](Leaf& l) {
         l.queues[{"Ethernet0", "UC3"}][2] += 12;
       }},
      {"pauses, no ECN marks",
       [](Leaf& l) {
         for (auto& [k, v] : l.ecn) v -= 300;
       }},
      {"ingress drops in the lossless PG", [](Leaf& l) { l.pg_drop["Ethernet4"][3] += 9; }},
  };
  const std::vector<std::set<std::tuple<std::string, std::string, int>>> want = {
      {},
      {{"pfc_storm", "leaf1", 3}},
      {{"pause_wrong_priority", "leaf1", 0}},
      {{"lossless_drops", "leaf1", 3}},
      {{"no_ecn_marking", "leaf1", 3}},
      {{"lossless_drops", "leaf1", 3}}};
  const std::vector<std::string> port = {"",          "Ethernet4", "Ethernet48",
                                         "Ethernet0", "",          "Ethernet4"};
  for (size_t n = 0; n < 3 * faults.size(); ++n) {
    const size_t i = n % faults.size();
    const int form = int(n / faults.size());
    SCOPED_TRACE(form);
    Scratch s;
    write_pair(s, two_hosts());
    const Leaf b = healthy_leaf();
    Leaf a = later(b);
    faults[i].second(a);
    write_leaf(s, "before", b, form);
    write_leaf(s, "after", a, form);
    auto bs = load_counter_dir(s.at("before"));
    auto as = load_counter_dir(s.at("after"));
    ASSERT_TRUE(bs && as) << (bs ? as.error().message : bs.error().message);
    auto d = diagnose(*bs, *as, kInterval, default_roce_profile(), &*fabric);
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(codes(*d), want[i]) << faults[i].first << "\n" << render_diagnosis(*d);
    if (!want[i].empty()) {
      ASSERT_EQ(d->findings.size(), 1u);
      EXPECT_EQ(d->findings[0].port, port[i]) << faults[i].first;
    }
    // Who pauses whom: each leaf port paused its peer 1,500 times; each host its leaf
    // port 12 times.
    ASSERT_EQ(d->pauses.size(), 5u) << render_diagnosis(*d);
    EXPECT_EQ(d->pauses[0].frames, 1500u);
    std::set<std::pair<std::string, std::string>> edges;
    for (const auto& e : d->pauses) edges.insert({e.device + " " + e.port, e.peer});
    EXPECT_EQ(edges,
              (std::set<std::pair<std::string, std::string>>{{"leaf1 Ethernet0", "h1:eth0"},
                                                             {"leaf1 Ethernet4", "h2:eth0"},
                                                             {"leaf1 Ethernet48", ""},
                                                             {"h1 mlx5_0/1", "leaf1:Ethernet0"},
                                                             {"h2 mlx5_0/1", "leaf1:Ethernet4"}}));
  }
}

// Ingress drops in a lossless priority group, read against the headroom the PG used (its
// XOFF watermark) and what the port's cable needs (SONiC's headroom for 100G over 3 m):
// headroom used and short of that is too small; none used, the port never paused; all of
// it, the sender kept sending; no watermark, the doctor says what to collect.
TEST(RoceDoctor, LosslessPgDropsAreReadAgainstTheHeadroomTheyUsed) {
  auto fabric = parse_roce_fabric(kLeafFabric, "fabric.yaml");
  ASSERT_TRUE(fabric) << fabric.error().message;
  const uint64_t need = sonic_headroom(100000, 3, 9100, 4, AsicParams{}).xoff;
  ASSERT_GT(need, 1024u);
  struct Case {
    std::optional<uint64_t> used;  // nullopt: no watermark file
    bool with_fabric;
    const char* what;
    const char* advice;
  };
  const std::vector<Case> cases = {
      {need / 2, true, "with its headroom full at", "too small for the cable"},
      {need / 2, false, "bytes of headroom", "give --fabric"},
      {0, true, "its headroom never used", "never paused its sender"},
      {need, true, "what the cable needs", "honours PFC late"},
      {std::nullopt, true, "lossless priority group 3", "DEVICE.pg_headroom"},
  };
  for (int form = 0; form < 2; ++form)
    for (const auto& c : cases) {
      SCOPED_TRACE(fmt::format("{} {} {}", form, c.what, c.with_fabric));
      Scratch s;
      write_pair(s, two_hosts());
      Leaf b = healthy_leaf();
      if (c.used) b.headroom["Ethernet4"][3] = *c.used;
      Leaf a = later(b);
      a.pg_drop["Ethernet4"][3] += 9;
      write_leaf(s, "before", b, form);
      write_leaf(s, "after", a, form);
      if (!c.used) {
        if (form) continue;  // (COUNTERS_DB always holds the watermark tables here)
        fs::remove(s.at("before") + "/leaf1.pg_headroom");
        fs::remove(s.at("after") + "/leaf1.pg_headroom");
      }
      auto bs = load_counter_dir(s.at("before"));
      auto as = load_counter_dir(s.at("after"));
      ASSERT_TRUE(bs && as) << (bs ? as.error().message : bs.error().message);
      auto d =
          diagnose(*bs, *as, kInterval, default_roce_profile(), c.with_fabric ? &*fabric : nullptr);
      ASSERT_TRUE(d) << d.error().message;
      ASSERT_EQ(d->findings.size(), 1u) << render_diagnosis(*d);
      const DoctorFinding& f = d->findings[0];
      EXPECT_EQ(f.code, "lossless_drops");
      EXPECT_EQ(f.port, "Ethernet4");
      EXPECT_EQ(f.priority, 3);
      EXPECT_NE(f.what.find(c.what), std::string::npos) << f.what;
      EXPECT_NE(f.advice.find(c.advice), std::string::npos) << f.advice;
      EXPECT_EQ(f.evidence.at("PG3|drop_pkts"), 9);
      if (c.used) {
        EXPECT_EQ(f.evidence.at("headroom_watermark_bytes"), *c.used);
      } else {
        EXPECT_FALSE(f.evidence.contains("headroom_watermark_bytes"));
      }
      if (c.with_fabric) {
        EXPECT_EQ(f.evidence.at("headroom_needed_bytes"), need);
      } else {
        EXPECT_FALSE(f.evidence.contains("headroom_needed_bytes"));
      }
    }
}

// A profile whose lossless priority 3 is queued on TC 5: the switch's PG is still the
// priority's own (DSCP and 802.1p map to the priority), so PG 3's drops are lossless and
// the lossy PG 0's are not.
TEST(RoceDoctor, APriorityQueuedElsewhereKeepsItsOwnPriorityGroup) {
  RoceProfile p = default_roce_profile();
  p.prio_tc[3] = 5;
  Scratch s;
  Leaf b = healthy_leaf();
  Leaf a = later(b);
  a.pg_drop["Ethernet4"][3] += 9;
  write_leaf(s, "before", b);
  write_leaf(s, "after", a);
  auto bs = load_counter_dir(s.at("before"));
  auto as = load_counter_dir(s.at("after"));
  ASSERT_TRUE(bs && as) << (bs ? as.error().message : bs.error().message);
  auto d = diagnose(*bs, *as, kInterval, p);
  ASSERT_TRUE(d) << d.error().message;
  std::vector<std::string> pg;
  for (const auto& f : d->findings)
    if (f.code == "lossless_drops" && f.evidence.contains("PG3|drop_pkts")) pg.push_back(f.port);
  EXPECT_EQ(pg, std::vector<std::string>{"Ethernet4"}) << render_diagnosis(*d);
  for (const auto& f : d->findings) EXPECT_FALSE(f.evidence.contains("PG0|drop_pkts"));
}

// What the counters mean, read as the sources say: a watchdog row SONiC hid while it was
// 0/0 was 0; the NIC's storm warning events alone are a warning (error events: it stopped
// pausing); no pause counters on a NIC without mlx5's per-priority group say nothing of
// PFC.
TEST(RoceDoctor, StormsAndPfcAreReadAsTheSourcesMeanThem) {
  {
    Scratch s;
    write_pair(s, two_hosts());
    Leaf b = healthy_leaf();
    b.wd["Ethernet48:3"] = {0, 0, 0, 0, 0, 0};  // hidden by show pfcwd stats
    Leaf a = later(b);
    a.wd["Ethernet48:3"] = {1, 1, 0, 40, 0, 0};  // stormed and restored within the interval
    write_leaf(s, "before", b);
    write_leaf(s, "after", a);
    ASSERT_EQ(b.pfcwd_text().find("Ethernet48:3"), std::string::npos);
    auto d = run(s);
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(codes(*d),
              (std::set<std::tuple<std::string, std::string, int>>{{"pfc_storm", "leaf1", 3}}))
        << render_diagnosis(*d);
  }
  {
    Scratch s;
    auto hosts = two_hosts();
    hosts["h1"].eth_add["tx_pause_storm_warning_events"] = 1;
    write_pair(s, hosts);
    auto d = run(s);
    ASSERT_TRUE(d) << d.error().message;
    ASSERT_EQ(d->findings.size(), 1u);
    EXPECT_EQ(d->findings[0].code, "pfc_storm");
    EXPECT_EQ(d->findings[0].severity, Severity::kWarning);
  }
  {
    Scratch s;
    auto hosts = two_hosts();
    for (auto* c : {&hosts["h2"].eth, &hosts["h2"].eth_add})
      std::erase_if(*c, [](const auto& kv) {
        return kv.first.starts_with("rx_prio") || kv.first.starts_with("tx_prio");
      });
    write_pair(s, hosts);
    auto d = run(s);
    ASSERT_TRUE(d) << d.error().message;
    for (const auto& f : d->findings) EXPECT_NE(f.code, "pfc_off") << render_diagnosis(*d);
  }
}

// Hand-written snapshots in the tools' own layouts (tests/data/roce_doctor: mlx5's
// ethtool -S with per-ring counters, grep -H over hw_counters, iproute2 6.7's rdma
// statistic with trailing spaces, SONiC's tables with commas and namespace lines, its
// priority-group tables under their titles): the planted faults and nothing else.
TEST(RoceDoctor, HandWrittenSnapshotsGiveThePlantedFaultsOnly) {
  const std::string data = std::string(WEFT_TEST_DATA) + "/roce_doctor";
  auto b = load_counter_dir(data + "/t0", doctor_reads);
  auto a = load_counter_dir(data + "/t1", doctor_reads);
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_TRUE(a) << a.error().message;
  auto d = diagnose(*b, *a, 10, default_roce_profile());
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(codes(*d), (std::set<std::tuple<std::string, std::string, int>>{
                           {"retransmission", "h2", -1}, {"lossless_drops", "leaf1", 3}}))
      << render_diagnosis(*d);
  EXPECT_EQ(d->findings.size(), 3u) << render_diagnosis(*d);
  for (const auto& f : d->findings)
    if (f.code == "lossless_drops") {
      EXPECT_EQ(f.port, "Ethernet8");
      if (f.evidence.contains("PG3|drop_pkts")) {  // ingress, show priority-group drop counters
        EXPECT_EQ(f.evidence.at("PG3|drop_pkts"), 11);
        EXPECT_EQ(f.evidence.at("headroom_watermark_bytes"), 38912);
      } else {
        EXPECT_EQ(f.evidence.at("UC3|drop_pkts"), 17);
      }
    } else {
      EXPECT_EQ(f.evidence.at("out_of_sequence"), 29);
    }
  ASSERT_FALSE(d->pauses.empty());
  EXPECT_EQ(d->pauses[0].device + " " + d->pauses[0].port, "leaf1 Ethernet8");
  EXPECT_EQ(d->pauses[0].frames, 400u);
}

}  // namespace
}  // namespace weft::roce
