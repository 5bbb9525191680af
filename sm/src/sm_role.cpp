// The SMInfo state machine. Transitions follow IBTA vol. 1, 14.4.1 and OpenSM's
// reading of it (osm_sm_state_mgr.c), so that the two interoperate in either role.
#include "weft/sm/sm_role.hpp"

namespace weft::sm {

namespace {

constexpr uint16_t kStatusInvalidField = 0x001C;  // invalid attribute or modifier value

bool usable(const RemoteSm& r) {
  return r.answered && r.key_ok && r.info.state != mad::SmState::kNotActive;
}

}  // namespace

const char* sm_control_name(uint32_t attr_mod) {
  switch (static_cast<SmControl>(attr_mod)) {
    case SmControl::kHandover:
      return "HANDOVER";
    case SmControl::kAcknowledge:
      return "ACKNOWLEDGE";
    case SmControl::kDisable:
      return "DISABLE";
    case SmControl::kStandby:
      return "STANDBY";
    case SmControl::kDiscover:
      return "DISCOVER";
  }
  return "unknown";
}

bool sm_outranks(uint8_t prio_a, Guid a, uint8_t prio_b, Guid b) {
  if (prio_a != prio_b) return prio_a > prio_b;
  return a.value < b.value;
}

mad::SmInfo SmRole::self(uint32_t act_count, bool with_key) const {
  mad::SmInfo s;
  s.guid = c_.guid;
  s.sm_key = with_key ? c_.sm_key : 0;
  s.act_count = act_count;
  s.priority = c_.priority;
  s.state = state_;
  return s;
}

SmRole::Decision SmRole::after_discovery(const std::vector<RemoteSm>& sms) {
  Decision d;
  const RemoteSm* master = nullptr;
  const RemoteSm* best = nullptr;  // the highest SM that outranks this one
  for (const auto& r : sms) {
    if (!usable(r)) continue;
    if (r.info.state == mad::SmState::kMaster && !master) master = &r;
    const RemoteSm& top = best ? *best : r;
    const bool above_us = sm_outranks(r.info.priority, r.guid, c_.priority, c_.guid);
    if (above_us && (!best || sm_outranks(r.info.priority, r.guid, top.info.priority, top.guid)))
      best = &r;
  }
  if (state_ != mad::SmState::kMaster) {
    // Discovering (or a standby told to rediscover): a master found is followed
    // whatever its priority (it hands over if this SM outranks it); an SM that outranks
    // this one and is itself still discovering or standing by is waited for.
    const RemoteSm* follow = master ? master : best;
    if (follow) {
      d.kind = Decision::kStandby;
      d.peer = *follow;
      d.why = master ? "a master SM runs at " + follow->name
                     : "SM " + follow->name + " (priority " +
                           std::to_string(follow->info.priority) + ") outranks this one";
      set_state(mad::SmState::kStandby);
      polled_ = *follow;
      failed_ = 0;
      return d;
    }
    out_of_standby_ = out_of_standby_ || state_ == mad::SmState::kStandby;
    set_state(mad::SmState::kMaster);
    polled_.reset();
    d.kind = Decision::kMaster;
    d.why = sms.empty() ? "no other SM" : "no other SM outranks this one";
    return d;
  }
  // Master already: yield to a higher SM, or wait for a lower master to yield.
  if (best) {
    d.kind = Decision::kHandover;
    d.peer = *best;
    d.why = "SM " + best->name + " (priority " + std::to_string(best->info.priority) +
            ") outranks this one";
    return d;
  }
  if (master) {
    d.kind = Decision::kWaitForHandover;
    d.peer = *master;
    d.why = "another master runs at " + master->name + " (priority " +
            std::to_string(master->info.priority) + "); waiting for its HANDOVER";
    ++epoch_;  // it programs the fabric meanwhile
    polled_ = *master;
    failed_ = 0;
    return d;
  }
  polled_.reset();
  d.kind = Decision::kMaster;
  d.why = sms.empty() ? "no other SM" : "no other SM outranks this one";
  return d;
}

void SmRole::handover_sent(const RemoteSm& to) {
  set_state(mad::SmState::kStandby);
  polled_ = to;
  failed_ = 0;
}

void SmRole::become_master() {
  set_state(mad::SmState::kMaster);
  polled_.reset();
}

SmRole::Answer SmRole::on_request(uint8_t method, uint32_t attr_mod, const mad::SmInfo& req,
                                  uint32_t act_count, bool authenticated) {
  Answer a;
  if (method == mad::kMethodGet) {
    // The SM_Key goes back to a requester that presents it, or none (OpenSM's Get
    // carries none, and it ignores an SM whose key does not match its own); a
    // requester presenting another key, or failing the M_Key check, gets zero.
    const bool key = authenticated && (req.sm_key == c_.sm_key || req.sm_key == 0);
    a.info = self(act_count, key);
    return a;
  }
  a.info = self(act_count, authenticated && req.sm_key == c_.sm_key);
  const char* what = sm_control_name(attr_mod);
  if (c_.sm_key != 0 && req.sm_key != c_.sm_key) {
    a.status = kStatusInvalidField;
    a.info.sm_key = 0;
    a.log = std::string("SMInfo Set ") + what + " refused: the sender's SM_Key does not match";
    return a;
  }
  // Who may send what (IBTA 14.4.1; OpenSM checks the same): ACKNOWLEDGE comes from a
  // standby, the others from a master.
  const auto ctl = static_cast<SmControl>(attr_mod);
  const bool from_master = req.state == mad::SmState::kMaster;
  const bool legal_sender = ctl == SmControl::kAcknowledge
                                ? req.state == mad::SmState::kStandby
                                : (attr_mod >= 1 && attr_mod <= 5 && from_master);
  auto refuse = [&](std::string why) {
    a.status = kStatusInvalidField;
    a.log = std::string("SMInfo Set ") + what + " (modifier " + std::to_string(attr_mod) +
            ") refused in state " + mad::sm_state_name(state_) + ": " + why;
    return a;
  };
  if (!legal_sender)
    return refuse(std::string("not allowed from an SM in state ") + mad::sm_state_name(req.state));
  const mad::SmState was = state_;
  switch (state_) {
    case mad::SmState::kDiscovering:
      if (ctl != SmControl::kHandover) return refuse("only HANDOVER is taken while discovering");
      a.sweep = true;  // the sweep under way or next makes this SM master
      break;
    case mad::SmState::kStandby:
      switch (ctl) {
        case SmControl::kHandover:
          set_state(mad::SmState::kMaster);
          out_of_standby_ = true;
          polled_.reset();
          a.sweep = true;
          a.acknowledge = true;
          break;
        case SmControl::kAcknowledge:
          break;
        case SmControl::kDiscover:
          set_state(mad::SmState::kDiscovering);
          out_of_standby_ = true;
          polled_.reset();
          a.sweep = true;
          break;
        case SmControl::kDisable:
          set_state(mad::SmState::kNotActive);
          polled_.reset();
          break;
        case SmControl::kStandby:
          return refuse("already STANDBY");
      }
      break;
    case mad::SmState::kNotActive:
      if (ctl != SmControl::kStandby) return refuse("only STANDBY wakes a NOTACTIVE SM");
      // Standby again; a sweep (reads only) finds the master to poll.
      set_state(mad::SmState::kDiscovering);
      a.sweep = true;
      break;
    case mad::SmState::kMaster:
      if (ctl != SmControl::kHandover) return refuse("a master takes only HANDOVER");
      // Another master yields to this one: stop waiting, sweep and program (what it
      // programmed meanwhile is not what this SM remembers).
      ++epoch_;
      polled_.reset();
      a.sweep = true;
      break;
  }
  a.info.state = state_;
  a.log = std::string("SMInfo Set ") + what + " from SM " + hex_guid(req.guid.value) + " (" +
          mad::sm_state_name(req.state) + "): " + mad::sm_state_name(was) + " -> " +
          mad::sm_state_name(state_);
  return a;
}

bool SmRole::poll_result(const std::optional<mad::SmInfo>& info, int retries) {
  if (!polled_) return false;
  bool alive = false;
  if (info) {
    if (state_ == mad::SmState::kStandby)
      alive = info->state == mad::SmState::kMaster ||
              (info->state == mad::SmState::kStandby && info->guid == polled_->guid &&
               sm_outranks(info->priority, info->guid, c_.priority, c_.guid));
    else if (state_ == mad::SmState::kMaster)
      alive = info->state == mad::SmState::kMaster &&
              !sm_outranks(info->priority, info->guid, c_.priority, c_.guid);
    if (alive) polled_->info = *info;
  }
  if (alive) {
    failed_ = 0;
    return false;
  }
  // A master waiting for a HANDOVER stops waiting as soon as the other one is no
  // longer a lower master; a standby gives its master `retries` more polls.
  if (state_ == mad::SmState::kMaster && info) {
    polled_.reset();
    return true;
  }
  if (++failed_ <= retries) return false;
  if (state_ == mad::SmState::kStandby) {
    set_state(mad::SmState::kDiscovering);
    out_of_standby_ = true;
  }
  polled_.reset();
  failed_ = 0;
  return true;
}

}  // namespace weft::sm
