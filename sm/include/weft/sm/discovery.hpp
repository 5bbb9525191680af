// weft/sm/discovery.hpp — directed-route discovery of the subnet: every switch,
// CA and router port reachable from the SM's port, with NodeInfo,
// NodeDescription, SwitchInfo and PortInfo of each. Copes with loops and
// parallel links; a MAD that fails is logged, counted and the sweep goes on.
// The result is canonical: nodes ordered by a breadth-first walk from the SM
// with ports in increasing order, so the same fabric gives the same model
// whatever order replies arrived in.
//
//   auto d = weft::sm::discover(engine);
//   d->fabric.num_switches(); d->problems;
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/fabric/fabric.hpp"
#include "weft/mad/mad_engine.hpp"

namespace weft::sm {

struct Discovered {
  fabric::Fabric fabric;
  fabric::NodeIndex local_node = 0;  // the node the SM's port is on (index 0 after canonicalising)
  PortNum local_port = 0;            // the SM's port on it (0 on a switch)
  std::vector<mad::DrPath> paths;    // per node: a shortest directed route from the SM
  std::vector<std::vector<mad::PortInfo>>
      port_info;                             // per node, per port: as read (raw kept for Sets)
  std::vector<std::vector<bool>> port_read;  // per node, per port: PortInfo was read
  std::vector<mad::SwitchInfo> switch_info;  // per node (switches only)
  std::vector<std::string> problems;         // MADs that failed, inconsistencies
  size_t unexplored = 0;  // ports with a live link whose far end did not answer or made no sense
  // Ports whose PortInfo read failed (after every attempt the engine gives) and whose
  // link was not found from the other end either: what lies beyond them is not known.
  size_t failed_reads = 0;
  // The nodes that hold those ports, and the ports whose far end did not answer: what
  // an update reads again to learn what this discovery could not (sorted, unique).
  std::vector<fabric::NodeIndex> incomplete;
  uint64_t smps = 0;  // SMPs put on the wire for this discovery
  // An update (Discovery::start_update) rather than a full walk: the switches read
  // again, and the links it found gone and new.
  bool update = false;
  size_t reread = 0, links_lost = 0, links_found = 0;
};

// The directed route that reaches `port` of `node`: for a switch, the node's own path;
// for a CA or router port, the path of its peer switch extended by the peer port.
mad::DrPath dr_path_to(const Discovered& d, fabric::NodeIndex node, PortNum port);

// Sets d.paths again: directed routes to every switch over `f` (the discovered fabric
// less the links weft disables), breadth-first from the SM, ports in increasing order.
void route_paths_over(Discovered& d, const fabric::Fabric& f);

struct DiscoveryOptions {
  int max_hops = kMaxDrHops;
};

// Discovery in two steps, for a caller that waits for the engine its own way (a
// sweep phase): start() submits the first reads, and once every completion has run,
// finish() canonicalises what was found. Fails only when the SM's own node cannot be
// read (no fabric to speak of) or the transport failed.
class Discovery {
 public:
  explicit Discovery(mad::MadEngine& eng, const DiscoveryOptions& opts = {});
  ~Discovery();
  Discovery(const Discovery&) = delete;
  Discovery& operator=(const Discovery&) = delete;
  void start();
  // Instead of start(): the model `prev` (as the last sweep left the devices) brought
  // up to date by reading again only the switches in `dirty` (a trap 128, a
  // PortStateChange): links of theirs now down are dropped, ports that trained since
  // are probed across and anything new beyond them explored. The result is what a full
  // walk would find when nothing else changed. finish() fails when any read fails or
  // makes no sense: then discover in full.
  void start_update(const Discovered& prev, const std::vector<fabric::NodeIndex>& dirty);
  Result<Discovered> finish(const Result<void>& pumped);

 private:
  struct Walk;
  mad::MadEngine& eng_;
  std::unique_ptr<Walk> walk_;
  uint64_t sent0_ = 0;
  std::optional<size_t> reread_;  // an update: how many switches it reads again
};

// Both steps, pumping the engine in between (tests, tools).
Result<Discovered> discover(mad::MadEngine& eng, const DiscoveryOptions& opts = {});

}  // namespace weft::sm
