// weft roce diff by effect, against configurations as platforms ship them: hand-written
// stock inputs (tests/data/roce_stock: mlx5 hosts read by old and new iproute2, SONiC
// config_db in both reference styles, Cumulus NVUE) with NVIDIA's reference values
// must give no error, where the literal diff gave some; each real fault planted in them
// gives one error per port, naming the field that causes it.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "test_data.hpp"
#include "weft/roce/profile.hpp"
#include "weft/roce/report.hpp"
#include "weft/text_file.hpp"

using namespace weft;
using namespace weft::roce;

namespace {

struct Stock {
  const char* file;
  const char* device;  // for a file that does not name its device
};
const Stock kStock[] = {{"host_iproute2_new.json", ""},
                        {"host_iproute2_old.json", ""},
                        {"sonic_plain.json", ""},
                        {"sonic_bracketed.json", ""},
                        {"cumulus.nvue", "leaf8"}};

Observed read(const Stock& s) {
  const std::string path = std::string(WEFT_TEST_DATA) + "/roce_stock/" + s.file;
  auto text = read_text_file(path);
  EXPECT_TRUE(text) << path;
  auto ob = parse_observed(text ? *text : "", s.file, s.device);
  EXPECT_TRUE(ob) << (ob ? "" : ob.error().message);
  return ob ? std::move(*ob) : Observed{};
}

std::string all(const std::vector<Finding>& fs) {
  std::string s;
  for (const auto& f : fs) s += to_text(f) + "\n";
  return s;
}

// Errors per (device, port).
std::map<std::string, std::vector<const Finding*>> errors_by_port(const std::vector<Finding>& fs) {
  std::map<std::string, std::vector<const Finding*>> m;
  for (const auto& f : fs)
    if (f.severity == Severity::kError) m[f.device + " " + f.port].push_back(&f);
  return m;
}

TEST(RoceEffect, StockConfigurationsWithTheReferenceValuesHaveNoErrors) {
  const RoceProfile p = roce::default_roce_profile();
  for (const Stock& s : kStock) {
    const Observed ob = read(s);
    const auto d = diff_observed(p, nullptr, {ob});
    EXPECT_EQ(errors(d.findings), 0u) << s.file << ":\n" << all(d.findings);
    // What the literal diff called errors is still there to read, as info.
    const auto lit = diff_observed(p, nullptr, {ob}, DiffMode::kLiteral);
    EXPECT_GT(errors(lit.findings), 0u) << s.file << ": the literal diff would not tell";
    EXPECT_FALSE(d.unreached.empty()) << s.file;
    for (const auto& u : d.unreached) EXPECT_EQ(u.severity, Severity::kInfo) << to_text(u);
  }
}

TEST(RoceEffect, IdentityMapsAndUnusedSchedulersAreSpellings) {
  const RoceProfile p = roce::default_roce_profile();
  const auto d = diff_observed(p, nullptr, {read(kStock[2])});
  auto listed = [&](const std::string& port, const std::string& field) {
    for (const auto& u : d.unreached)
      if (u.port == port && u.field == field) return true;
    return false;
  };
  EXPECT_TRUE(listed("Ethernet0", "tc_to_queue")) << all(d.unreached);
  EXPECT_TRUE(listed("Ethernet0", "tc_to_pg")) << all(d.unreached);
  EXPECT_TRUE(listed("Ethernet0", "pfc_priority_to_queue")) << all(d.unreached);
  EXPECT_TRUE(listed("Ethernet0", "queue[1].scheduler")) << all(d.unreached);
  // The host's unused TCs, reported vendor: the ETS table, as info only.
  const auto h = diff_observed(p, nullptr, {read(kStock[0])});
  bool ets = false;
  for (const auto& u : h.unreached) ets |= u.field == "ets.tc-tsa/tc-bw";
  EXPECT_TRUE(ets) << all(h.unreached);
  // mlx5's stock DSCP map puts DSCPs 24-31 on the RoCE priority: a warning naming them.
  bool dscps = false;
  for (const auto& f : h.findings)
    dscps |= f.severity == Severity::kWarning && f.field == "app.dscp-prio" &&
             f.message.find("24-25,27-31") != std::string::npos;
  EXPECT_TRUE(dscps) << all(h.findings);
}

struct Fault {
  const char* name;
  std::function<void(HostConfig&)> host;
  std::function<void(SwitchPort&)> sw;
  const char* host_field;
  const char* sw_field;
};

TEST(RoceEffect, EachFaultIsOneErrorPerPortNamingItsField) {
  const RoceProfile p = roce::default_roce_profile();
  const Fault faults[] = {
      {"PFC off on the RoCE priority", [](HostConfig& h) { h.pfc_mask = 0; },
       [](SwitchPort& s) { s.pfc_mask = 0; }, "pfc.prio-pfc", "pfc_enable"},
      {"DCQCN notification point off", [](HostConfig& h) { h.np_mask = 0; }, nullptr,
       "ecn.roce_np.enable[3]", nullptr},
      {"DCQCN reaction point off", [](HostConfig& h) { h.rp_mask = 0; }, nullptr,
       "ecn.roce_rp.enable[3]", nullptr},
      {"RoCE DSCP on a lossy priority", [](HostConfig& h) { (*h.dscp_prio)[26] = 0; },
       [](SwitchPort& s) { (*s.dscp_tc)[26] = 0; }, "app.dscp-prio[26]", "dscp_to_tc[26]"},
      {"ECN off on the RoCE queue", nullptr, [](SwitchPort& s) { s.wred_ecn[3] = false; }, nullptr,
       "queue[3].wred"},
      {"CNP on a non-strict queue",
       [](HostConfig& h) {
         (*h.ets)[6] = {roce::Tsa::kVendor, 0};
       },
       [](SwitchPort& s) {
         s.sched[6] = {roce::Tsa::kEts, 10};
       },
       "ets.tc-tsa[6]", "queue[6].scheduler"},
      // No check names this one: only the effect shows it (50 % of the weights in use
      // asked, 30 % held; the best-effort class's share moves too, a warning).
      {"RoCE's share of the scheduler moved",
       [](HostConfig& h) { (*h.ets)[3].bw = 30, (*h.ets)[0].bw = 70; },
       [](SwitchPort& s) { s.sched[3].weight = 20; }, "ets.tc-tsa[3]", "queue[3].scheduler"},
      {"MTU mismatch", [](HostConfig& h) { h.mtu = 9216; }, [](SwitchPort& s) { s.mtu = 1500; },
       "mtu", "mtu"},
  };
  for (const Stock& s : kStock)
    for (const Fault& f : faults) {
      Observed ob = read(s);
      const bool host = ob.host.has_value();
      if (host ? !f.host : !f.sw) continue;
      size_t planted = 0;
      if (host) {
        f.host(*ob.host), planted = 1;
      } else {
        for (auto& port : ob.sw->ports) f.sw(port), ++planted;
      }
      const auto d = diff_observed(p, nullptr, {ob});
      const auto by_port = errors_by_port(d.findings);
      EXPECT_EQ(by_port.size(), planted) << s.file << ", " << f.name << ":\n" << all(d.findings);
      for (const auto& [port, errs] : by_port) {
        ASSERT_EQ(errs.size(), 1u) << s.file << ", " << f.name << ", " << port << ":\n"
                                   << all(d.findings);
        EXPECT_EQ(errs[0]->field, host ? f.host_field : f.sw_field)
            << s.file << ", " << f.name << ": " << to_text(*errs[0]);
      }
    }
}

}  // namespace
