#include "weft/mad/umad_transport.hpp"

#include <fcntl.h>
#include <infiniband/umad.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "weft/log.hpp"
#include "weft/mad/rmpp.hpp"

namespace weft::mad {
namespace {

std::string errno_str(int e) {
  return std::strerror(e < 0 ? -e : e);
}

struct Candidate {
  std::string ca;
  int port;
  uint64_t guid;
  int state, phys_state;
  uint16_t lid, sm_lid;
};

std::vector<Candidate> list_ports() {
  std::vector<Candidate> out;
  char names[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
  int n = umad_get_cas_names(names, UMAD_MAX_DEVICES);
  for (int i = 0; i < n; ++i) {
    umad_ca_t ca;
    if (umad_get_ca(names[i], &ca) < 0) continue;
    // A switch's management port is port 0; a CA's ports start at 1.
    for (int p = 0; p <= ca.numports && p < UMAD_CA_MAX_PORTS; ++p) {
      if (!ca.ports[p]) continue;
      const umad_port_t* up = ca.ports[p];
      out.push_back({names[i], p, be64toh(up->port_guid), static_cast<int>(up->state),
                     static_cast<int>(up->phys_state), static_cast<uint16_t>(up->base_lid),
                     static_cast<uint16_t>(up->sm_lid)});
    }
    umad_release_ca(&ca);
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<UmadTransport>> UmadTransport::open(const UmadPortSpec& spec) {
  if (umad_init() < 0)
    return fail(Errc::kIo, "umad_init failed: no InfiniBand MAD support (is ib_umad loaded?)");
  auto ports = list_ports();
  if (ports.empty()) return fail(Errc::kIo, "no InfiniBand CA ports found (umad_get_cas_names)");
  const Candidate* pick = nullptr;
  for (const auto& c : ports) {
    if (spec.guid && c.guid != spec.guid) continue;
    if (!spec.ca.empty() && c.ca != spec.ca) continue;
    if (spec.port && c.port != spec.port) continue;
    if (spec.guid || spec.port) {
      pick = &c;
      break;
    }
    if (c.phys_state == 5 && !pick) pick = &c;  // LinkUp
  }
  if (!pick && !spec.guid && !spec.port) {
    for (const auto& c : ports)
      if (spec.ca.empty() || c.ca == spec.ca) {
        pick = &c;
        break;
      }
  }
  if (!pick) {
    std::string have;
    for (const auto& c : ports)
      have += " " + c.ca + "/" + std::to_string(c.port) + "=" + hex_guid(c.guid);
    return fail(Errc::kInvalidInput, "no CA port matches --ca " +
                                         (spec.ca.empty() ? "*" : spec.ca) + " --port " +
                                         std::to_string(spec.port) + " --guid " +
                                         hex_guid(spec.guid) + "; ports:" + have);
  }
  std::unique_ptr<UmadTransport> t(new UmadTransport());
  t->local_ = {pick->ca,          pick->port,  Guid{pick->guid}, Lid{pick->lid},
               Lid{pick->sm_lid}, pick->state, pick->phys_state};
  t->portid_ = umad_open_port(pick->ca.c_str(), pick->port);
  if (t->portid_ < 0)
    return fail(Errc::kIo, "umad_open_port " + pick->ca + "/" + std::to_string(pick->port) + ": " +
                               errno_str(t->portid_));
  // Receive requests of our classes too (SMInfo queries, traps): the SM is their receiver.
  long mask[16 / sizeof(long)] = {};
  auto set_bit = [&](int m) { mask[m / (8 * sizeof(long))] |= 1L << (m % (8 * sizeof(long))); };
  set_bit(kMethodGet);
  set_bit(kMethodSet);
  set_bit(kMethodTrap);
  t->agent_dr_ = umad_register(t->portid_, kClassSmiDirect, 1, 0, mask);
  t->agent_lid_ = umad_register(t->portid_, kClassSmiLid, 1, 0, mask);
  if (t->agent_dr_ < 0 || t->agent_lid_ < 0)
    return fail(Errc::kIo, "umad_register for SMP classes on " + pick->ca + "/" +
                               std::to_string(pick->port) + " failed (is another SM running?)");
  // The SA: requests of class SubnAdm (version 2) on QP1.
  long sa_mask[16 / sizeof(long)] = {};
  auto sa_bit = [&](int m) { sa_mask[m / (8 * sizeof(long))] |= 1L << (m % (8 * sizeof(long))); };
  for (int m : {0x01, 0x02, 0x12, 0x14, 0x15}) sa_bit(m);  // Get Set GetTable GetMulti Delete
  t->agent_sa_ = umad_register(t->portid_, 0x03, 2, 1, sa_mask);
  if (t->agent_sa_ < 0)
    return fail(Errc::kIo, "umad_register for the SubnAdm class on " + pick->ca + "/" +
                               std::to_string(pick->port) + " failed (is another SA running?)");
  // Performance management (class 0x04, version 1), as a client: the PMAs' replies to
  // the counter sweep's queries.
  t->agent_perf_ = umad_register(t->portid_, 0x04, 1, 0, nullptr);
  if (t->agent_perf_ < 0)
    return fail(Errc::kIo, "umad_register for the PerfMgt class on " + pick->ca + "/" +
                               std::to_string(pick->port) + " failed");
  // Congestion control (class 0x21, version 2), as a client: the CC agents' replies.
  // Without it congestion control cannot be spoken (its MADs fail), nothing else.
  t->agent_cc_ = umad_register(t->portid_, 0x21, 2, 0, nullptr);
  if (t->agent_cc_ < 0)
    WEFT_LOG(Warn, "UMAD-0004") << "umad_register for the congestion-control class on " << pick->ca
                                << "/" << pick->port << " failed: no congestion control";
  t->sendbuf_.assign(umad_size() + kMadSize, 0);
  t->recvbuf_.assign(umad_size() + kMadSize, 0);
  WEFT_LOG(Info, "UMAD-0001") << "bound to " << pick->ca << " port " << pick->port << " guid "
                              << hex_guid(pick->guid) << " state " << pick->state << " phys "
                              << pick->phys_state;
  return t;
}

UmadTransport::~UmadTransport() {
  if (issm_fd_ >= 0) ::close(issm_fd_);
  if (portid_ >= 0) umad_close_port(portid_);
}

Result<void> UmadTransport::set_is_sm(bool on) {
  if (on && issm_fd_ < 0) {
    char path[256];
    if (umad_get_issm_path(local_.ca.c_str(), local_.port, path, sizeof path) < 0)
      return fail(Errc::kIo, "no issm device for " + local_.ca + "/" + std::to_string(local_.port));
    issm_fd_ = ::open(path, O_RDWR);
    if (issm_fd_ < 0)
      return fail(Errc::kIo, std::string("open ") + path + ": " + errno_str(errno) +
                                 " (another SM on this port?)");
  } else if (!on && issm_fd_ >= 0) {
    ::close(issm_fd_);
    issm_fd_ = -1;
  }
  return {};
}

int UmadTransport::agent_for(uint8_t mgmt_class) const {
  switch (mgmt_class) {
    case kClassSmiDirect:
      return agent_dr_;
    case kClassSmiLid:
      return agent_lid_;
    case 0x03:
      return agent_sa_;
    case 0x04:
      return agent_perf_;
    case 0x21:
      return agent_cc_;
    default:
      return -1;  // no agent: never through another class's
  }
}

Result<void> UmadTransport::send(const MadBuf& mad, const SendAddr& to) {
  std::memcpy(umad_get_mad(sendbuf_.data()), mad.data(), kMadSize);
  // SMPs go to QP0 with no Q_Key; GMPs to the QP and Q_Key `to` names (QP1).
  umad_set_addr(sendbuf_.data(), to.dlid.value, static_cast<int>(to.qpn), to.sl,
                static_cast<int>(to.qkey));
  umad_set_pkey(sendbuf_.data(), to.pkey_index);
  const int agent = agent_for(mad[1]);
  if (agent < 0)
    return fail(Errc::kUnsupported, "no agent for management class " + std::to_string(mad[1]));
  const int tmo_ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(to.response_timeout).count());
  int r = umad_send(portid_, agent, sendbuf_.data(), kMadSize, tmo_ms, 0);
  if (r < 0) return fail(Errc::kIo, "umad_send: " + errno_str(r ? r : errno));
  return {};
}

Result<void> UmadTransport::send_long(std::span<const uint8_t> mad, const SendAddr& to) {
  std::vector<uint8_t> buf(umad_size() + std::max(mad.size(), kMadSize), 0);
  std::memcpy(umad_get_mad(buf.data()), mad.data(), mad.size());
  umad_set_addr(buf.data(), to.dlid.value, static_cast<int>(to.qpn), to.sl,
                static_cast<int>(to.qkey));
  umad_set_pkey(buf.data(), to.pkey_index);
  // An RMPP-active answer goes with its true length: the kernel segments it and sets
  // the payload lengths from it (a requester reads the record count from them).
  // Anything else is one whole MAD.
  const size_t len = rmpp_active(mad) ? mad.size() : kMadSize;
  const int agent = agent_for(mad.size() > 1 ? mad[1] : 0);
  if (agent < 0)
    return fail(Errc::kUnsupported,
                "no agent for management class " + std::to_string(mad.size() > 1 ? mad[1] : 0));
  int r = umad_send(portid_, agent, buf.data(), static_cast<int>(len), 0, 0);
  if (r < 0) return fail(Errc::kIo, "umad_send: " + errno_str(r ? r : errno));
  return {};
}

Result<std::optional<InMad>> UmadTransport::receive(Duration max_wait) {
  const int fd = umad_get_fd(portid_);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(max_wait).count();
  if (ms < 0) ms = 0;
  if (ms == 0 && max_wait.count() > 0) ms = 1;
  pollfd pfd{fd, POLLIN, 0};
  int pr = ::poll(&pfd, 1, static_cast<int>(ms));
  if (pr < 0) {
    if (errno == EINTR) return std::optional<InMad>{};
    return fail(Errc::kIo, "poll on umad fd: " + errno_str(errno));
  }
  if (pr == 0) return std::optional<InMad>{};
  int len = static_cast<int>(recvbuf_.size() - umad_size());
  int r = umad_recv(portid_, recvbuf_.data(), &len, 0);
  if (r == -ENOSPC && len > 0 && size_t(len) <= kMaxMessage) {
    // A message coalesced from RMPP segments (a host's multi-MAD request) that does
    // not fit: the kernel keeps it; take it whole with a buffer of the size it says.
    recvbuf_.assign(umad_size() + size_t(len), 0);
    r = umad_recv(portid_, recvbuf_.data(), &len, 0);
  }
  if (r < 0) {
    if (r == -EWOULDBLOCK || r == -EAGAIN || r == -ETIMEDOUT) return std::optional<InMad>{};
    if (r == -ENOSPC) {
      // Larger than weft takes (kMaxMessage): drop it rather than stop serving.
      WEFT_LOG(Warn, "UMAD-0003") << "dropped an incoming message of " << len << " bytes";
      return std::optional<InMad>{};
    }
    return fail(Errc::kIo, "umad_recv: " + errno_str(r));
  }
  InMad in;
  in.len = len < 0 ? 0 : std::min<size_t>(static_cast<size_t>(len), kMadSize);
  std::memcpy(in.mad.data(), umad_get_mad(recvbuf_.data()), kMadSize);
  const ib_mad_addr_t* addr = umad_get_mad_addr(recvbuf_.data());
  in.slid = Lid{be16toh(addr->lid)};
  in.sqpn = be32toh(addr->qpn);
  in.sl = addr->sl;
  in.pkey_index = addr->pkey_index;
  in.send_timed_out = umad_status(recvbuf_.data()) == ETIMEDOUT;
  if (in.send_timed_out) in.len = kMadSize;  // the buffer holds our own request
  return std::optional<InMad>(in);
}

}  // namespace weft::mad
