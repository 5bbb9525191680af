#include "weft/sm/publisher.hpp"

#include <chrono>

namespace weft::sm {

Publisher::Publisher()
    : started_unix_s_(std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count()) {}

void Publisher::heavy(double ms) {
  ++heavy_sweeps_;
  sweep_seconds_ += ms / 1000;
  for (size_t i = 0; i < sweep_le_.size(); ++i)
    sweep_le_[i] += ms / 1000 <= Published::kSweepBuckets[i];
}

void Publisher::fabric_changed(const Signatures& now) {
  versions_.nodes += now.nodes != sig_.nodes;
  versions_.ports += now.ports != sig_.ports;
  versions_.links += now.links != sig_.links;
  versions_.partitions += now.partitions != sig_.partitions;
  sig_ = now;
}

std::shared_ptr<const Published> Publisher::publish(std::shared_ptr<Published> p) {
  auto old = published_.load();
  if (old && old->multicast && p->multicast && *old->multicast == *p->multicast)
    p->multicast = old->multicast;
  p->heavy_sweeps = heavy_sweeps_;
  p->light_sweeps = light_sweeps_;
  p->drift_lft = drift_lft_;
  p->drift_pkey = drift_pkey_;
  p->drift_sl2vl = drift_sl2vl_;
  p->drift_vlarb = drift_vlarb_;
  p->drift_ar = drift_ar_;
  p->sweep_le = sweep_le_;
  p->sweep_count = heavy_sweeps_;
  p->sweep_seconds = sweep_seconds_;
  p->started_unix_s = started_unix_s_;
  p->options = options_;
  if (old) {
    versions_.multicast += p->multicast != old->multicast;
    versions_.sm += p->state != old->state || p->priority != old->priority || p->lid != old->lid;
  }
  p->versions = versions_;
  published_.store(std::move(p));
  return old;
}

}  // namespace weft::sm
