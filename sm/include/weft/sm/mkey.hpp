// weft/sm/mkey.hpp — M_Keys (IBTA vol. 1, 14.2.4): the key each port should hold,
// the key each SMP carries, and what the ports hold, kept across restarts.
//
// A port checks the M_Key of every SMP against its own (a switch: port 0's). A port
// whose key is 0 takes any SMP; otherwise a Set (or TrapRepress) with another key is
// dropped, and so is a Get at protection level 2 and up; at level 1 such a Get is
// answered with the key hidden. A dropped SMP counts a violation, sends trap 256 and
// starts the lease timer; when the lease runs out before an SMP with the right key
// arrives, the port's protection level falls to 0 and anyone may read its key.
//
// The key for a port: `m_key` as is (OpenSM's way), or with m_key_per_port one of its
// own, derived from `m_key` and the port GUID (so a key read off one port opens no
// other). What each port holds is kept in STATE_DIR/guid2mkey, and the links in
// STATE_DIR/neighbors, both in OpenSM's formats, so that an SMP to a port not yet
// discovered in this process still carries its key: the port at the far end of a
// known link is known.
//
//   MKeyBook keys({.m_key = 0x1234, .per_port = true, .protect_bits = 2});
//   engine.set_keys(&keys);          // every SMP gets its key; every reply teaches it
//   keys.learn(discovered);          // the links and LIDs of a sweep
//   keys.save(state_dir);            // only when something changed
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "weft/mad/mad.hpp"
#include "weft/mad/mad_engine.hpp"
#include "weft/store/state_store.hpp"

namespace weft::sm {

struct MKeyOptions {
  uint64_t m_key = 0;         // m_key: 0 = no M_Key protection (OpenSM's default)
  bool per_port = false;      // m_key_per_port: a key per port, derived from m_key
  uint8_t protect_bits = 0;   // m_key_protection_level, 0-3
  uint16_t lease_period = 0;  // m_key_lease_period in seconds; 0 = the lease never runs out
  bool lookup = true;         // m_key_lookup: FALSE = every SMP carries m_key itself
  bool enabled() const { return m_key != 0; }
  // The key `port` should hold.
  uint64_t key_of(Guid port) const;
};

// The key of `port` under secret `secret`: the first 8 bytes of HMAC-SHA256 keyed with
// the secret (8 bytes, big-endian) over the port GUID (8 bytes, big-endian); never 0.
uint64_t derive_m_key(uint64_t secret, Guid port);

class MKeyBook final : public mad::KeySource {
 public:
  explicit MKeyBook(MKeyOptions o = {}) : o_(o) {}
  void set_options(const MKeyOptions& o) { o_ = o; }
  const MKeyOptions& options() const { return o_; }

  uint64_t wanted(Guid port) const { return o_.key_of(port); }
  // The SM's own port: where a directed route of no hops leads.
  void set_local_port(Guid g) { local_ = g.value; }
  // The key it holds as far as weft knows (guid2mkey), else the one it should hold.
  uint64_t held(Guid port) const;
  // KeySource: the key an SMP to the request's target carries; what a reply shows.
  // A port whose key change has an unknown outcome (a PortInfo Set that changes it,
  // while unanswered, and after it went unanswered or was refused with an error status,
  // until a reply shows the key) holds
  // the old key or the new one: the attempts alternate them, the held one first.
  uint64_t key_for(const mad::SmpRequest& req, int attempt = 1) const override;
  void observe(const mad::SmpRequest& req, const mad::Smp& reply) override;
  void unanswered(const mad::SmpRequest& req) override;
  // The key a port may hold instead of held() (a key change whose outcome is unknown).
  std::optional<uint64_t> pending(Guid port) const;
  // A Set with the right key was taken: `port` now holds `key`.
  void note_held(Guid port, uint64_t key);
  // A sweep's model: every link (both directions) and every LID.
  void learn(const fabric::Fabric& f);

  // STATE_DIR/guid2mkey and STATE_DIR/neighbors; missing files are empty. Malformed
  // lines are skipped and returned as "file:line: what" warnings.
  Result<std::vector<std::string>> load(const std::string& dir);
  // Both files, written durably (guid2mkey mode 0600: it holds keys), when changed;
  // through the SM's state store, or to a directory.
  Result<void> save(store::StateStore& store);
  Result<void> save(const std::string& dir);
  bool dirty() const { return dirty_keys_ || dirty_links_; }

  const std::map<uint64_t, uint64_t>& guid2mkey() const { return g2m_; }
  size_t links() const { return neighbors_.size(); }

 private:
  using End = std::pair<uint64_t, uint8_t>;  // port GUID, port number
  static std::string path_key(const mad::DrPath& p, uint8_t hops);
  // The port whose key guards `req`'s target (by the directed routes NodeInfo answered
  // on, the links known, or the LIDs); none where unknown.
  std::optional<Guid> port_of(const mad::SmpRequest& req) const;
  // The key a PortInfo Set gives the key-holding port it reaches, if it changes it.
  std::optional<uint64_t> key_change(const mad::SmpRequest& req, Guid port) const;
  bool keyed() const { return o_.enabled() || nonzero_held_ > 0; }

  MKeyOptions o_;
  uint64_t local_ = 0;
  std::map<uint64_t, uint64_t> g2m_;      // port GUID -> the key it holds
  std::map<uint64_t, uint64_t> pending_;  // port GUID -> a key it may hold instead
  size_t nonzero_held_ = 0;
  std::map<End, End> neighbors_;
  struct Reached {
    uint64_t guid = 0;  // the port GUID NodeInfo gave there
    bool is_switch = false;
  };
  std::unordered_map<std::string, Reached> at_path_;  // directed route -> what it reaches
  std::unordered_map<uint16_t, uint64_t> at_lid_;     // LID -> port GUID
  bool dirty_keys_ = false, dirty_links_ = false;
};

}  // namespace weft::sm
