// weft/routing/engine.hpp — routing engines behind one interface. An engine is
// pure: an immutable fabric (with LIDs assigned) in, per-switch linear
// forwarding tables out (and, for engines that layer paths onto virtual lanes,
// an SL per path), or a typed refusal. No MADs, no clocks, no globals.
//
//   auto engine = weft::routing::make_engine("minhop");
//   weft::routing::Routed t = (*engine)->compute(fabric, {});
//   uint8_t out_port = t->lft[switch_index][lid];
//
// Engines form an ordered fallback chain, configured as OpenSM's routing_engine
// option is: the first engine that routes wins, and every refusal before it is kept.
//
//   auto chain = weft::routing::EngineChain::parse("ftree,updn,minhop");
//   weft::routing::ChainResult r = chain->compute(fabric, {});
//   r.engine; r.fallbacks[0].failure.message;
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/fabric/fabric.hpp"

namespace weft::routing {

// What an engine keeps beside its tables for its next repair (Options::previous): its
// own type, opaque to everyone else. It describes the tables as the engine made them:
// whatever changes their lft afterwards must drop it.
struct EngineMemo {
  virtual ~EngineMemo() = default;
};

struct Tables {
  // lft[n] is the LFT of node n (index into Fabric::nodes()); empty for non-switches.
  // lft[n][lid] is the output port, kDropPort where the LID is not routed.
  std::vector<std::vector<PortNum>> lft;
  uint16_t top_lid = 0;            // highest LID in use: LinearFDBTop for every switch
  std::vector<std::string> notes;  // what the engine chose and why (roots, fallbacks)
  // Engines that layer paths onto virtual lanes: path_sl[n][lid] is the SL a packet
  // entering the switch fabric at switch n (from one of its CAs, or from n itself)
  // must carry to `lid`; SL i travels on VL i. Empty for single-VL engines (SL 0).
  std::vector<std::vector<uint8_t>> path_sl;
  uint8_t vls = 1;  // data VLs the routes need to be deadlock-free (1 = no layering)
  // Engines whose VL changes along a path, as OpenSM's torus-2QoS (dor): a switch picks
  // each hop's VL from the packet's SL, the port it came in by and the port it leaves
  // by (a switch's SL2VL table per input and output port). hop_vl[n] (switch n; empty:
  // SL i on VL i everywhere) holds (ports + 1)^2 maps, input-major:
  // hop_vl[n][in * (ports + 1) + out], SL s's VL in bits 4s..4s+3 (hop_vl_of), 0xF
  // for an SL the routes do not use (the QoS policy maps those); end ports apply
  // end_vl. path_sl then says only which SL a path carries.
  std::vector<std::vector<uint64_t>> hop_vl;
  uint64_t end_vl = ~uint64_t(0);  // with hop_vl: the map of every end port (CA, router)
  static constexpr uint8_t kNoHopVl = 0xF;
  static uint8_t hop_vl_of(uint64_t map, unsigned sl) { return uint8_t(map >> (4 * sl) & 0xF); }
  // With hop_vl: the map node n applies to what enters by `in` and leaves by `out` (an
  // end port: end_vl); nullopt without hop_vl, or for a switch the engine gave none.
  std::optional<uint64_t> hop_map(const fabric::Fabric& f, fabric::NodeIndex n, PortNum in,
                                  PortNum out) const {
    if (hop_vl.empty()) return std::nullopt;
    const auto& nd = f.node(n);
    if (!nd.is_switch()) return end_vl;
    const size_t np = nd.ports.size();
    if (n >= hop_vl.size() || hop_vl[n].size() != np * np || in >= np || out >= np)
      return std::nullopt;
    return hop_vl[n][size_t(in) * np + out];
  }
  // Adaptive routing (when Options::adaptive): beside each static entry, the group of
  // ports a switch may choose among per packet. ar_sets[n] lists switch n's distinct
  // port groups; ar_group[n][lid] indexes them (kNoArGroup: none). Every group holds
  // the static port. Trees (ftree) and up/down (updn, dnup, unlayered): every port one
  // hop nearer the destination in the static port's direction (up or down; down only
  // to switches whose own route goes on down), so any per-packet choice stays minimal
  // and up*down*; other engines: the parallel links to the static port's next switch,
  // so any choice follows the static route.
  static constexpr uint16_t kNoArGroup = 0xFFFF;
  std::vector<std::vector<uint16_t>> ar_group;
  std::vector<std::vector<std::vector<PortNum>>> ar_sets;
  // An engine that repaired Options::previous rather than routing afresh: `rerouted`
  // (switch, LID) entries (those whose previous route no longer was a shortest one: it
  // crossed what was lost) were routed again; every other entry is the previous one.
  bool repaired = false;
  uint64_t rerouted = 0;
  // Engines that promise deadlock freedom (every one but minhop) say so, and the chain
  // holds them to it: before the tables go anywhere their channel dependencies are
  // checked (analysis.hpp), and tables with a cycle are refused (Refusal::kCreditLoop)
  // and the next engine tried. Up/down engines give the order their routes follow
  // (height per node, and the LIDs whose routes may turn), which makes the check
  // cheap; it stays exact, since heights a route breaks get the full check.
  bool deadlock_free = false;
  std::vector<uint32_t> updown_height;  // empty: the full check
  std::vector<uint16_t> updown_turning;
  // The engine's memo for its next repair, if it keeps one (minhop: its distances
  // and per-port counts, 20 MB on the radix-56 tree; updn and dnup: their distances
  // and bridges, 106-133 MB; ftree: every target's plan, about 70 MB).
  std::shared_ptr<const EngineMemo> memo;
};

// The tables a previous computation gave, and the fabric it ran on (node indices
// are that fabric's; nodes are matched by GUID).
struct PreviousRoutes {
  const fabric::Fabric* fabric = nullptr;
  const Tables* tables = nullptr;
  std::string engine;  // the engine that computed them
};

// A seed of a torus description: a switch and its neighbours one step + and - in each
// dimension (Guid{}: not given; one of the two is enough), and where the origin lies
// from it (torus-2QoS.conf's x_dateline: the dateline sits before coordinate 0).
struct TorusSeed {
  Guid seed;
  std::vector<Guid> plus, minus;
  std::vector<int> dateline;  // per dimension (empty: 0)
};

// The shape of a torus or mesh for dimension-order routing, as OpenSM's
// torus-2QoS.conf gives it: the radix of each dimension, whether it wraps, and a
// seed switch with its neighbour in the + direction of each dimension.
struct TorusSpec {
  std::vector<int> radix;  // 1 to 3 dimensions
  bool wrap = true;        // torus (true) or mesh, for the dimensions `ring` does not name
  Guid seed;
  std::vector<Guid> plus;  // the seed's neighbour one step + in each dimension
  // The rest of torus-2QoS.conf:
  std::vector<Guid> minus;            // the seed's neighbour one step - (Guid{}: not given)
  std::vector<int> dateline;          // per dimension: the origin from the seed (empty: 0)
  std::vector<int8_t> ring;           // per dimension: 1 torus, 0 mesh (`3t`, `4m`); -1: `wrap`
  std::string axes;                   // each dimension's letter in the file ("yz" for
                                      // `torus 1 4 5`); empty: "xyz"
  std::vector<TorusSeed> next_seeds;  // next_seed: tried in order when a seed's switch is gone

  bool wraps(size_t d) const { return d < ring.size() && ring[d] >= 0 ? ring[d] == 1 : wrap; }
  char axis(size_t d) const { return d < axes.size() ? axes[d] : char('x' + d); }
  // The first seed as a TorusSeed, and the spec seeded from another.
  TorusSeed first_seed() const { return {seed, plus, minus, dateline}; }
  TorusSpec seeded(const TorusSeed& s) const {
    TorusSpec t = *this;
    t.seed = s.seed, t.plus = s.plus, t.minus = s.minus, t.dateline = s.dateline;
    return t;
  }
};

struct Options {
  std::vector<Guid> roots;         // up/down roots (node GUIDs); empty = detect
  uint8_t max_vls = 8;             // data VLs a layered engine may use
  bool adaptive = false;           // also compute adaptive-routing port groups (Tables::ar_*)
  std::optional<TorusSpec> torus;  // for dor
  // Switches x LIDs past which dfsssp takes its large-fabric ways: one balancing pass
  // (no rip-up), destinations balanced in pairs on two cores, routing-tree branches
  // layered before single paths (past 1/80 of it in deferred paths).
  size_t large_fabric = 20'000'000;
  // Compute as on a one-core machine (tests: the tables must be the same either way).
  bool one_core = false;
  // Bytes of up/down distances (2 x 2 bytes per switch and destination switch) updn and
  // dnup hold at once; past it they go through the destinations in spans that fit (the
  // radix-56 tree's take 61 MB; tests make it small to run the spans).
  size_t updown_distance_budget = size_t(512) << 20;
  // After a change that only took links away (a link, a switch or hosts lost, every
  // LID where it was): an engine that can (minhop, updn, dnup, ftree, dfsssp) keeps each
  // previous entry that is still one of its own choices and routes again only the
  // others, balanced over the links as before, so a failure rewrites only the tables
  // it touched (dfsssp then layers the repaired routes afresh). Any
  // other change (a link or node that is new, a LID that moved), or previous tables
  // of another engine, and the engine routes afresh. Empty = afresh.
  PreviousRoutes previous;
  // Called now and then by long computations with what they are at ("layering:
  // 12000 of 47824 LIDs, 2 VLs"); empty = silent.
  std::function<void(const std::string&)> progress;
};

// Why an engine did not route. Kinds, so that callers (the chain, the REST API,
// tests) can tell "this engine does not apply here" from "the input is wrong".
enum class Refusal {
  kInvalidInput,  // the fabric is inconsistent (two ports hold one LID, a root is no switch)
  kTopology,      // the engine does not apply to this topology ("not a fat tree")
  kVirtualLanes,  // deadlock freedom needs more VLs than allowed
  kDisconnected,  // some switch cannot reach some LID
  kCreditLoop,    // the engine promised deadlock freedom, and its tables close a cycle
};
const char* refusal_name(Refusal r);

struct Failure {
  Refusal kind = Refusal::kTopology;
  std::string message;  // starts with the engine's name: "ftree: ..."
};
using Routed = std::expected<Tables, Failure>;
inline std::unexpected<Failure> refuse(Refusal kind, std::string message) {
  return std::unexpected<Failure>(Failure{kind, std::move(message)});
}

class RoutingEngine {
 public:
  virtual ~RoutingEngine() = default;
  virtual std::string_view name() const = 0;
  [[nodiscard]] virtual Routed compute(const fabric::Fabric& f, const Options& o) const = 0;
};

// The closed table of engines: minhop, updn, dnup, ftree, dfsssp, dor.
Result<std::unique_ptr<RoutingEngine>> make_engine(std::string_view name);
std::vector<std::string_view> engine_names();

struct Fallback {
  std::string engine;
  Failure failure;
};
struct ChainResult {
  std::optional<Tables> tables;     // empty when every engine refused
  std::string engine;               // the engine that routed
  std::vector<Fallback> fallbacks;  // engines that refused before it, in order
  std::string summary() const;      // "ftree refused (not a fat tree: ...); routed by updn"
};

class EngineChain {
 public:
  // "ftree,updn,minhop": names from engine_names(), no repeats, at least one. NVIDIA's
  // SM names its adaptive-routing engines ar_updn, ar_ftree, ar_minhop and ar_dor: each
  // is read as that engine, and adaptive_names() lists them (the SM then asks for AR
  // groups and programs them where switches hold AR).
  static Result<EngineChain> parse(std::string_view spec);
  const std::vector<std::string>& adaptive_names() const { return adaptive_; }
  // A chain of the given engines, in order (tests: an engine of their own).
  static EngineChain of(std::vector<std::shared_ptr<const RoutingEngine>> engines);
  ChainResult compute(const fabric::Fabric& f, const Options& o) const;
  const std::vector<std::string_view>& names() const { return names_; }

 private:
  std::vector<std::string_view> names_;
  std::vector<std::shared_ptr<const RoutingEngine>> engines_;
  std::vector<std::string> adaptive_;
};

// A list of switch GUIDs, one per line (OpenSM's root_guid_file format): "0x" hex,
// blank lines and '#' comments allowed. Errors name the file and line.
Result<std::vector<Guid>> read_guid_list(std::istream& in, const std::string& origin);

// A torus description, OpenSM's torus-2QoS.conf (torus-2QoS.conf(5)):
//   torus 4 4 4          (or mesh; 1 to 3 radices, a radix-1 dimension left out; a
//                         suffix t/T or m/M makes one dimension a torus or a mesh:
//                         `torus 3 4M 5M` is `mesh 3T 4 5`)
//   xp_link 0xSEED 0xNEXT   the seed switch and its neighbour one step +x (xm_link: -x;
//                           y and z likewise; one of p and m is enough)
//   x_dateline N            the origin N steps from the seed (y, z likewise)
//   next_seed               the links and datelines after it are another seed, used
//                           when a switch of the one before is gone
// '#' comments, and tokens after those a keyword takes, are ignored, as are
// portgroup_max_ports, port_order and max_changes. Errors name the file and line.
Result<TorusSpec> read_torus_spec(std::istream& in, const std::string& origin);

// CA ports in topology order: grouped by leaf switch (leaves sharing their up
// neighbours, as a pod's do, next to each other), then by the leaf's port. This
// is the rank order a topology-aware job launcher uses; the ftree engine numbers
// destinations in it, and the analyzer's shift patterns follow it.
std::vector<std::pair<fabric::NodeIndex, PortNum>> topology_order(const fabric::Fabric& f);

// Every LID in use and where it lives: (lid, node, port). Switches contribute port 0;
// a virtual port with a LID of its own (Fabric::vports) lives at its physical port.
struct LidOwner {
  Lid lid;
  fabric::NodeIndex node;
  PortNum port;
};
std::vector<LidOwner> lid_owners(const fabric::Fabric& f);

}  // namespace weft::routing
