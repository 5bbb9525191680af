// The programmers, in the order each step calls them: ports before forwarding entries
// (as a sweep has always sent them), the tables that follow the port settings, then
// multicast on the published snapshot; adaptive routing last in each step (its groups
// and AR LFT go after the LFT blocks, AR on after LinearFDBTop); the CA ports' virtual
// ports after everything else (their tables after the ports', their states once written).
#include <utility>

#include "ar_programmer.hpp"
#include "device_tables.hpp"
#include "lft_programmer.hpp"
#include "multicast_programmer.hpp"
#include "port_programmer.hpp"
#include "programmer.hpp"
#include "vport_programmer.hpp"

namespace weft::sm {

Programmers::Programmers(mad::MadEngine& eng, const SmOptions& o)
    : ports_(std::make_unique<PortProgrammer>(eng, o)),
      lfts_(std::make_unique<LftProgrammer>(eng, o)),
      tables_(std::make_unique<DeviceTables>(eng, o, *ports_, *lfts_)),
      mc_(std::make_unique<MulticastProgrammer>(eng)),
      ar_(std::make_unique<ArProgrammer>(eng, o, *lfts_)),
      vports_(std::make_unique<VPortProgrammer>(eng, o)),
      all_{ports_.get(), lfts_.get(), tables_.get(), mc_.get(), ar_.get(), vports_.get()} {}

Programmers::~Programmers() = default;

void Programmers::step(Step s, SweepRun& run) {
  for (Programmer* p : all_) p->step(s, run);
}

bool Programmers::begin_term(uint64_t epoch) {
  if (epoch_ == epoch) return false;
  for (Programmer* p : all_) p->forget_all();
  had_term_ = epoch_.has_value();
  epoch_ = epoch;
  return true;
}

}  // namespace weft::sm
