// The MADs between SMs: SMInfo Gets, HANDOVER and ACKNOWLEDGE, trap 144, and the
// answer to another SM's SMInfo.
#include "weft/sm/sm_peers.hpp"

#include "weft/log.hpp"

namespace weft::sm {

using fabric::NodeIndex;

SmPeers::SmPeers(mad::MadEngine& eng, mad::Transport& t, Config c, Guid port_guid)
    : eng_(eng), t_(t), c_(c), role_(SmRole::Config{c.sm_key, c.priority, port_guid}) {}

void SmPeers::configure(Config c) {
  c_ = c;
  role_.configure({c_.sm_key, c_.priority, role_.config().guid});
}

void SmPeers::set_self(Guid guid, Lid lid) {
  guid_ = guid;
  lid_ = lid;
  role_.configure({c_.sm_key, c_.priority, guid});
}

std::vector<RemoteSm> SmPeers::find(const Discovered& d, Guid self) {
  std::vector<RemoteSm> out;
  for (NodeIndex n = 0; n < d.fabric.size(); ++n) {
    const auto& nd = d.fabric.node(n);
    for (PortNum p = nd.is_switch() ? 0 : 1; p <= (nd.is_switch() ? 0 : nd.num_ports); ++p) {
      if (p >= d.port_read[n].size() || !d.port_read[n][p]) continue;
      const auto& port = nd.ports[p];
      if (!(port.attrs.capability_mask & mad::kCapIsSm) || port.guid == self) continue;
      if (!nd.is_switch() && !port.linked()) continue;
      RemoteSm r;
      r.guid = port.guid;
      r.lid = port.attrs.lid;
      r.path = dr_path_to(d, n, p);
      r.name = fabric::port_ref(d.fabric, n, p);
      out.push_back(std::move(r));
    }
  }
  return out;
}

void SmPeers::read(std::vector<RemoteSm>& sms, std::shared_ptr<void> keep) {
  for (auto& one : sms) {
    eng_.submit(sm_info_get(one.path), [this, keep, sm = &one](Result<mad::Smp> r) {
      if (!r) {
        sm->error = r.error().message;
        return;
      }
      sm->answered = true;
      sm->info = mad::decode_sm_info(r->data);
      sm->key_ok = key_matches(sm->info);
      if (sm->info.guid != sm->guid) {
        sm->answered = false;
        sm->error = "its SMInfo names port " + hex_guid(sm->info.guid.value);
      }
    });
  }
}

void SmPeers::log(const std::vector<RemoteSm>& sms) {
  for (const auto& sm : sms) {
    if (!sm.answered)
      WEFT_LOG(Warn, "SM-0040") << "SM port " << sm.name << " (" << hex_guid(sm.guid.value)
                                << ") did not answer SMInfo: " << sm.error;
    else if (!sm.key_ok)
      WEFT_LOG(Warn, "SM-0041") << "SM " << sm.name << " (" << hex_guid(sm.guid.value)
                                << ") answers with SM_Key " << hex_guid(sm.info.sm_key)
                                << ", not ours: ignored";
    else
      WEFT_LOG(Info, "SM-0042") << "SM " << sm.name << " (" << hex_guid(sm.guid.value)
                                << "): " << mad::sm_state_name(sm.info.state) << ", priority "
                                << int(sm.info.priority) << ", ActCount " << sm.info.act_count;
  }
}

std::shared_ptr<SmPeers::Recheck> SmPeers::recheck() {
  auto seen = std::make_shared<Recheck>();
  seen->sms = sms_;
  for (size_t i = 0; i < seen->sms.size(); ++i) {
    mad::SmpRequest req = sm_info_get(seen->sms[i].path);
    req.retries = 0;
    eng_.submit(req, [this, seen, i](Result<mad::Smp> r) {
      RemoteSm& sm = seen->sms[i];
      const bool was = sm.answered && sm.key_ok;
      sm.answered = r.has_value();
      if (!r) {
        sm.error = r.error().message;
        return;
      }
      sm.info = mad::decode_sm_info(r->data);
      sm.key_ok = key_matches(sm.info);
      if (sm.key_ok && sm.info.guid == sm.guid &&
          (sm.info.state == mad::SmState::kMaster ||
           sm_outranks(sm.info.priority, sm.guid, c_.priority, guid_) || !was))
        seen->changed = true;
    });
  }
  return seen;
}

std::shared_ptr<std::optional<Error>> SmPeers::send_handover(const RemoteSm& to,
                                                             const std::string& why) {
  WEFT_LOG(Info, "SM-0043") << "handing mastership over: " << why;
  mad::SmpRequest req =
      mad::SmpRequest::set(mad::kAttrSmInfo, uint32_t(SmControl::kHandover), to.path,
                           mad::encode_sm_info(role_.self(act_count(), true)));
  req.retries = eng_.options().retries;  // one round, as every SMInfo to a peer
  auto failed = std::make_shared<std::optional<Error>>();
  eng_.submit(req, [failed](Result<mad::Smp> r) {
    if (!r) *failed = r.error();
  });
  return failed;
}

void SmPeers::send_trap144(const RemoteSm& to) {
  // OpenSM does the same on entering STANDBY.
  if (!to.lid.is_unicast() || !lid_.is_unicast()) return;
  mad::Smp t;
  t.mgmt_class = mad::kClassSmiLid;
  t.method = mad::kMethodTrap;
  t.attr_id = mad::kAttrNotice;
  t.tid = 0x7e000000ull | (eng_.stats().sent & 0xffffff);
  mad::SmpData& d = t.data;
  d[0] = 0x80 | 4;  // IsGeneric, Type 4 (informational)
  d[1] = 0;
  d[2] = 0;
  d[3] = 1;  // ProducerType: channel adapter
  d[4] = 144 >> 8;
  d[5] = 144 & 0xff;
  d[6] = uint8_t(lid_.value >> 8);  // IssuerLID
  d[7] = uint8_t(lid_.value);
  // DataDetails from byte 10: reserved(16), LIDAddr(16), reserved(15), LocalChanges(1),
  // CapabilityMask(32), reserved(10), ChangeFlags(6), CapabilityMask2(16).
  d[12] = uint8_t(lid_.value >> 8);
  d[13] = uint8_t(lid_.value);
  const uint32_t cap = mad::kCapIsSm;
  d[16] = uint8_t(cap >> 24);
  d[17] = uint8_t(cap >> 16);
  d[18] = uint8_t(cap >> 8);
  d[19] = uint8_t(cap);
  if (auto r = t_.send(mad::encode_smp(t), mad::SendAddr::lid(to.lid)); !r)
    WEFT_LOG(Warn, "SM-0051") << "trap 144 to the master at LID " << to.lid.value
                              << " failed: " << r.error().message;
  else
    WEFT_LOG(Info, "SM-0052") << "trap 144 sent to SM " << to.name << " at LID " << to.lid.value;
}

std::optional<SmPeers::Control> SmPeers::on_sm_info(const mad::Smp& s, const mad::InMad& in) {
  const mad::SmInfo req = mad::decode_sm_info(s.data);
  const mad::SmState was = role_.state();
  auto a = role_.on_request(s.method, s.attr_mod, req, act_count());
  if (!a.log.empty()) {
    if (a.status)
      WEFT_LOG(Warn, "SM-0048") << a.log;
    else
      WEFT_LOG(Info, "SM-0049") << a.log;
  }
  mad::Smp resp = s;
  resp.method = mad::kMethodGetResp;
  resp.direction = true;
  resp.status = a.status;
  resp.data = mad::encode_sm_info(a.info);
  mad::SendAddr to = s.mgmt_class == mad::kClassSmiDirect ? mad::SendAddr::directed()
                                                          : mad::SendAddr::lid(in.slid);
  if (auto r = t_.send(mad::encode_smp(resp), to); !r)
    WEFT_LOG(Warn, "SM-0021") << "answer to SMInfo "
                              << (s.method == mad::kMethodSet ? "Set" : "Get")
                              << " failed: " << r.error().message;
  if (s.method != mad::kMethodSet || a.status) return std::nullopt;
  if (a.acknowledge) {
    // The old master hears that its HANDOVER was taken: SMInfo Set ACKNOWLEDGE, sent as
    // the standby this SM was when the HANDOVER came (IBTA 14.4.1).
    mad::SmInfo ack = role_.self(act_count(), true);
    ack.state = mad::SmState::kStandby;
    std::optional<mad::SmpRequest> req_ack;
    for (const auto& r : sms_)
      if (r.guid == req.guid && !r.path.ports.empty())
        req_ack = mad::SmpRequest::set(mad::kAttrSmInfo, uint32_t(SmControl::kAcknowledge), r.path,
                                       mad::encode_sm_info(ack));
    if (!req_ack && in.slid.is_unicast()) {
      req_ack = mad::SmpRequest::set(mad::kAttrSmInfo, uint32_t(SmControl::kAcknowledge), {},
                                     mad::encode_sm_info(ack));
      req_ack->directed = false;
      req_ack->dlid = in.slid;
    }
    if (req_ack) req_ack->retries = eng_.options().retries;  // one round
    if (req_ack)
      eng_.submit(*req_ack, [g = req.guid](Result<mad::Smp> r) {
        if (!r)
          WEFT_LOG(Warn, "SM-0050")
              << "ACKNOWLEDGE to " << hex_guid(g.value) << " failed: " << r.error().message;
      });
  }
  return Control{a.sweep,
                 {{"control", sm_control_name(s.attr_mod)},
                  {"from", hex_guid(req.guid.value)},
                  {"state", mad::sm_state_name(role_.state())},
                  {"was", mad::sm_state_name(was)},
                  {"sweep", a.sweep}}};
}

mad::SmpRequest SmPeers::sm_info_get(const mad::DrPath& path) const {
  // Another weft answers it with its key only when ours matches.
  mad::SmpRequest req = mad::SmpRequest::get(mad::kAttrSmInfo, 0, path);
  req.data = mad::encode_sm_info(role_.self(act_count(), true));
  // One round of attempts (no more for a peer SM that hangs: the sweep waits on it).
  req.retries = eng_.options().retries;
  return req;
}

bool SmPeers::key_matches(const mad::SmInfo& theirs) const {
  return c_.sm_key == 0 || theirs.sm_key == c_.sm_key;
}

void SmPeers::poll(std::function<void(Poll)> done) {
  const auto& polled = role_.polled();
  if (!polled) return done({});
  mad::SmpRequest req = sm_info_get(polled->path);
  req.retries = 0;  // the polls are the retries: polling_retries of them
  const Guid want = polled->guid;
  eng_.submit(req, [this, want, done = std::move(done)](Result<mad::Smp> r) {
    std::optional<mad::SmInfo> info;
    if (r) {
      info = mad::decode_sm_info(r->data);
      if (info->guid != want || !key_matches(*info)) info.reset();
    }
    const mad::SmState was = role_.state();
    const auto name = role_.polled() ? role_.polled()->name : std::string();
    const auto lower_master = role_.polled();
    const int failed_before = role_.failed_polls();
    const bool gone = role_.poll_result(info, c_.polling_retries);
    if (!gone && was == mad::SmState::kMaster && info && lower_master) send_trap144(*lower_master);
    if (!info)
      WEFT_LOG(Warn, "SM-0053") << "SM " << name << " did not answer its poll ("
                                << failed_before + 1 << " in a row): "
                                << (r ? std::string("wrong GUID or SM_Key") : r.error().message);
    if (gone)
      WEFT_LOG(Warn, "SM-0054") << "SM " << name
                                << (was == mad::SmState::kStandby
                                        ? " is gone: taking over"
                                        : " no longer a master: programming");
    done({gone, name});
  });
}

}  // namespace weft::sm
