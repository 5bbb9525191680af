#include "weft/roce/fabric.hpp"

#include "weft/roce/profile.hpp"
#include "weft/text_file.hpp"
#include "yaml_util.hpp"

namespace weft::roce {

const std::map<std::string, AsicParams>& builtin_asics() {
  static const std::map<std::string, AsicParams> kAsics = [] {
    std::map<std::string, AsicParams> m;
    AsicParams spc1;
    spc1.name = "spectrum";
    spc1.cell_size = 96;
    m[spc1.name] = spc1;
    AsicParams spc2;  // the defaults
    m[spc2.name] = spc2;
    return m;
  }();
  return kAsics;
}

int RoceFabric::add_device(RoceDevice d) {
  const int idx = static_cast<int>(devices.size());
  by_name.emplace(d.name, idx);
  devices.push_back(std::move(d));
  return idx;
}

int RoceFabric::add_port(int device, const std::string& name) {
  RoceDevice& d = devices[device];
  if (int p = d.port(name); p >= 0) return p;
  const int idx = static_cast<int>(d.ports.size());
  RocePort port;
  port.name = name;
  d.ports.push_back(std::move(port));
  d.port_index.emplace(name, idx);
  return idx;
}

Result<int> RoceFabric::add_link(PortRef a, PortRef b, uint64_t speed_mbps, uint64_t length_m,
                                 int line) {
  if (a == b) return fail(Errc::kInvalidInput, port_name(a) + " is linked to itself");
  for (PortRef p : {a, b}) {
    const RocePort& port = devices[p.device].ports[p.port];
    if (port.link >= 0)
      return fail(Errc::kInvalidInput, port_name(p) + " is already linked (line " +
                                           std::to_string(links[port.link].line) + ")");
  }
  const int idx = static_cast<int>(links.size());
  links.push_back(RoceLink{a, b, speed_mbps, length_m, line});
  for (PortRef p : {a, b}) {
    RocePort& port = devices[p.device].ports[p.port];
    port.link = idx;
    port.speed_mbps = speed_mbps;
  }
  return idx;
}

PortRef RoceFabric::peer(PortRef p) const {
  const int l = devices[p.device].ports[p.port].link;
  if (l < 0) return {};
  return links[l].a == p ? links[l].b : links[l].a;
}

namespace {

constexpr size_t kMaxErrors = 50;

bool read_asic(YamlReader& r, const YNode& n, const std::string& what, AsicParams* a) {
  if (!r.keys(n, what,
              {"cell_size", "pipeline_latency", "mac_phy_delay", "peer_response_time",
               "lossless_mtu", "small_packet_percentage", "max_headroom"}))
    return false;
  bool good = true;
  auto size = [&](const char* key, uint64_t* out) {
    if (n[key])
      good &=
          r.unit(n[key], what + "." + key, parse_bytes, "a size like 18KiB", 0, 1ull << 32, out);
  };
  size("cell_size", &a->cell_size);
  size("pipeline_latency", &a->pipeline_latency);
  size("mac_phy_delay", &a->mac_phy_delay);
  size("peer_response_time", &a->peer_response_time);
  size("lossless_mtu", &a->lossless_mtu);
  size("max_headroom", &a->max_headroom);
  int64_t v = 0;
  if (n["small_packet_percentage"] &&
      r.integer(n["small_packet_percentage"], what + ".small_packet_percentage", 0, 100, &v))
    a->small_packet_percentage = static_cast<uint64_t>(v);
  if (a->cell_size == 0) r.error(n, what + ": cell_size must be above 0"), good = false;
  return good;
}

}  // namespace

Result<RoceFabric> parse_roce_fabric(std::string_view text, const std::string& source) {
  YamlReader r(source);
  RoceFabric f;
  f.source = source;
  const YNode root = r.load(text);
  if (!r.ok()) return fail(Errc::kInvalidInput, r.message());
  if (!root.IsMap())
    return fail(Errc::kInvalidInput,
                source + ": expected a mapping with switches, hosts and links");
  if (!r.keys(root, "fabric", {"asics", "defaults", "switches", "hosts", "links"}))
    return fail(Errc::kInvalidInput, r.message());

  std::map<std::string, AsicParams> asics = builtin_asics();
  if (const auto& n = root["asics"]) {
    if (!n.IsMap())
      r.error(n, "asics: expected a mapping of name: parameters");
    else
      for (const auto& kv : n.map) {
        AsicParams a;
        a.name = kv.first.Scalar();
        if (read_asic(r, kv.second, "asics." + a.name, &a)) asics[a.name] = a;
      }
  }
  uint64_t dflt_speed = 100000, dflt_length = 3;
  if (const auto& n = root["defaults"]; n && r.keys(n, "defaults", {"speed", "length"})) {
    if (n["speed"])
      r.unit(n["speed"], "defaults.speed", parse_speed_mbps, "a speed like 100G", 1, 1600000,
             &dflt_speed);
    if (n["length"])
      r.unit(n["length"], "defaults.length", parse_length_m, "a length like 3m", 0, 100000,
             &dflt_length);
  }

  auto devices = [&](const char* key, DeviceKind kind) {
    const auto& list = root[key];
    if (!list) return;
    if (!list.IsSequence()) return r.error(list, std::string(key) + ": expected a list");
    for (const auto& n : list.seq) {
      const std::string what = std::string(key) + " entry";
      if (!n.IsMap()) {
        r.error(n, what + ": expected a mapping {name: ...}");
        continue;
      }
      // Unknown keys are errors; the device is still declared, so links to it do not cascade.
      if (kind == DeviceKind::kSwitch)
        r.keys(n, what, {"name", "os", "asic"});
      else
        r.keys(n, what, {"name", "ports"});
      RoceDevice d;
      d.kind = kind;
      d.line = r.line(n);
      if (!n["name"] || !r.scalar(n["name"], what + ".name", &d.name) || d.name.empty()) {
        if (!n["name"]) r.error(n, what + ": name is required");
        continue;
      }
      if (d.name.find(':') != std::string::npos) {
        r.error(n["name"], what + ": a device name cannot hold ':' (links write device:port)");
        continue;
      }
      if (f.device(d.name) >= 0) {
        r.error(n["name"], "device \"" + d.name + "\" is declared twice (first at line " +
                               std::to_string(f.devices[f.device(d.name)].line) + ")");
        continue;
      }
      size_t idx = 0;
      if (n["os"] && r.choice(n["os"], d.name + ".os", {"sonic", "cumulus"}, &idx))
        d.os = static_cast<SwitchOs>(idx);
      if (const auto& a = n["asic"]) {
        std::string name;
        if (a.IsMap()) {
          d.asic.name = d.name;
          read_asic(r, a, d.name + ".asic", &d.asic);
        } else if (r.scalar(a, d.name + ".asic", &name)) {
          auto it = asics.find(name);
          if (it == asics.end()) {
            std::vector<std::string> names;
            for (auto& [k, v] : asics) names.push_back(k);
            r.error(a, d.name + ".asic: unknown ASIC \"" + name + "\"" +
                           text::did_you_mean(name, names));
          } else {
            d.asic = it->second;
          }
        }
      }
      const int dev = f.add_device(std::move(d));
      if (const auto& ports = n["ports"]) {
        if (!ports.IsSequence()) {
          r.error(ports, key + std::string(" ") + f.devices[dev].name + ".ports: expected a list");
          continue;
        }
        for (const auto& p : ports.seq) {
          std::string ifname, rdma;
          int64_t rport = 1;
          if (p.IsMap()) {
            if (!r.keys(p, "port", {"ifname", "rdma", "rdma_port"})) continue;
            if (!p["ifname"]) {
              r.error(p, "port: ifname is required");
              continue;
            }
            r.scalar(p["ifname"], "port.ifname", &ifname);
            if (p["rdma"]) r.scalar(p["rdma"], "port.rdma", &rdma);
            if (p["rdma_port"]) r.integer(p["rdma_port"], "port.rdma_port", 1, 255, &rport);
          } else if (!r.scalar(p, "port", &ifname)) {
            continue;
          }
          if (ifname.empty()) continue;
          const int pi = f.add_port(dev, ifname);
          f.devices[dev].ports[pi].rdma = rdma;
          f.devices[dev].ports[pi].rdma_port = static_cast<int>(rport);
        }
      }
    }
  };
  devices("switches", DeviceKind::kSwitch);
  devices("hosts", DeviceKind::kHost);

  if (const auto& list = root["links"]) {
    if (!list.IsSequence())
      r.error(list, "links: expected a list");
    else
      for (const auto& n : list.seq) {
        const YNode* a = &YNode::absent();
        const YNode* b = a;
        const YNode* speed = a;
        const YNode* length = a;
        if (n.IsSequence()) {
          if (n.size() < 2 || n.size() > 4) {
            r.error(n,
                    "link: expected [A:PORT, B:PORT, SPEED, LENGTH] (speed and length optional)");
            continue;
          }
          a = &n[size_t(0)], b = &n[size_t(1)];
          if (n.size() > 2) speed = &n[size_t(2)];
          if (n.size() > 3) length = &n[size_t(3)];
        } else if (n.IsMap()) {
          if (!r.keys(n, "link", {"a", "b", "speed", "length"})) continue;
          a = &n["a"], b = &n["b"], speed = &n["speed"], length = &n["length"];
          if (!*a || !*b) {
            r.error(n, "link: a and b are required");
            continue;
          }
        } else {
          r.error(n, "link: expected [A:PORT, B:PORT, SPEED, LENGTH] or {a:, b:, speed:, length:}");
          continue;
        }
        PortRef ends[2];
        bool good = true;
        for (int i = 0; i < 2; ++i) {
          std::string s;
          if (!r.scalar(i ? *b : *a, "link end", &s)) {
            good = false;
            continue;
          }
          const size_t colon = s.rfind(':');
          if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) {
            r.error(i ? *b : *a, "link end \"" + s + "\": expected DEVICE:PORT");
            good = false;
            continue;
          }
          const std::string dev = s.substr(0, colon);
          const int d = f.device(dev);
          if (d < 0) {
            std::vector<std::string> names;
            if (f.devices.size() < 5000)
              for (const auto& dv : f.devices) names.push_back(dv.name);
            r.error(i ? *b : *a, "link end \"" + s + "\": no switch or host named \"" + dev + "\"" +
                                     text::did_you_mean(dev, names));
            good = false;
            continue;
          }
          ends[i] = {d, f.add_port(d, s.substr(colon + 1))};
        }
        uint64_t sp = dflt_speed, len = dflt_length;
        if (*speed && !speed->IsNull())
          good &=
              r.unit(*speed, "link speed", parse_speed_mbps, "a speed like 100G", 1, 1600000, &sp);
        if (*length && !length->IsNull())
          good &=
              r.unit(*length, "link length", parse_length_m, "a length like 3m", 0, 100000, &len);
        if (!good) continue;
        if (auto l = f.add_link(ends[0], ends[1], sp, len, r.line(n)); !l)
          r.error(n, l.error().message);
      }
  }
  if (!r.ok()) {
    std::string m = r.message();
    size_t cut = 0, lines = 0;
    while (lines < kMaxErrors && (cut = m.find('\n', cut)) != std::string::npos) ++cut, ++lines;
    if (cut != std::string::npos && lines == kMaxErrors) {
      const size_t more =
          static_cast<size_t>(std::count(m.begin() + static_cast<long>(cut), m.end(), '\n')) + 1;
      m = m.substr(0, cut) + "... and " + std::to_string(more) + " more errors";
    }
    return fail(Errc::kInvalidInput, m);
  }
  return f;
}

Result<RoceFabric> load_roce_fabric(const std::string& path) {
  return parse_text_file(
      path, [](std::string_view t, const std::string& src) { return parse_roce_fabric(t, src); });
}

}  // namespace weft::roce
