// weft/sm/publisher.hpp — what the SM shows the rest of the process, and how it changes:
// the sweep counts and durations, a version counter per collection (UFM's app/versioning),
// and the Published view itself, swapped whole and atomically so that any thread reads a
// consistent one. The SM fills a view from its parts; the publisher adds the counts and
// versions and makes it the current one.
//
//   pub.heavy(ms);                                  // a heavy sweep that took `ms`
//   pub.fabric_changed(sig);                        // the sweep's fabric, as signatures
//   auto was = pub.publish(std::move(view));        // the view it replaced (null: none)
//   auto now = pub.published();                     // any thread
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "weft/sm/snapshot.hpp"

namespace weft::sm {

class Publisher {
 public:
  Publisher();

  // A heavy sweep finished in `ms` (counted and timed); one that ended without routing
  // (standby, not master) is counted only; a light sweep that found nothing changed.
  void heavy(double ms);
  void heavy_untimed() { ++heavy_sweeps_; }
  void light() { ++light_sweeps_; }
  // A switch found holding an LFT block weft did not write (drift_check_blocks), or a
  // P_Key, SL2VL or VLArb block (drift_check_table_blocks): by table.
  void drift_found(std::string_view table) {
    ++(table == "lft"     ? drift_lft_
       : table == "pkey"  ? drift_pkey_
       : table == "sl2vl" ? drift_sl2vl_
       : table == "ar"    ? drift_ar_
                          : drift_vlarb_);
  }
  uint64_t heavy_sweeps() const { return heavy_sweeps_; }
  uint64_t light_sweeps() const { return light_sweeps_; }

  // A sweep's fabric as one signature per collection: each that differs from the last
  // moves its version.
  struct Signatures {
    uint64_t nodes = 0, ports = 0, links = 0, partitions = 0;
  };
  void fabric_changed(const Signatures& now);
  // The options in force, shown with every view from now on.
  void set_options(std::shared_ptr<const SmOptions> o) { options_ = std::move(o); }

  // Makes `view` the current one: with the counts, the versions (multicast moves when
  // the groups differ from the last view's, which are shared when they do not; sm when
  // the SM's state, priority or LID changed) and the options. Returns the view it
  // replaced (null: the first).
  std::shared_ptr<const Published> publish(std::shared_ptr<Published> view);
  std::shared_ptr<const Published> published() const { return published_.load(); }

 private:
  uint64_t heavy_sweeps_ = 0, light_sweeps_ = 0, drift_lft_ = 0, drift_pkey_ = 0, drift_sl2vl_ = 0,
           drift_vlarb_ = 0, drift_ar_ = 0;
  std::array<uint64_t, std::size(Published::kSweepBuckets)> sweep_le_{};
  double sweep_seconds_ = 0;
  Versions versions_;
  Signatures sig_;
  int64_t started_unix_s_ = 0;
  std::shared_ptr<const SmOptions> options_;
  std::atomic<std::shared_ptr<const Published>> published_;
};

}  // namespace weft::sm
