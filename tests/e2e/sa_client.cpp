// A minimal SubnAdm client for the end-to-end tests: joins or leaves a multicast
// group for the port it runs on (on ibsim, the node SIM_HOST names), and prints the
// answer's status, MLID and MGID; or asks MultiPathRecords (GetMulti) from its port to
// others and prints each PathRecord's SLID and DLID. saquery cannot send either.
//
//   weft_sa_client join|leave|create MGID [full|sendonly]
//
// create joins with the components IBTA asks of a join that creates a group (Q_Key
// 0x0b1b, TClass 0, P_Key 0xffff, SL 0, FlowLabel 0, HopLimit 0, as IPoIB sends them),
// which OpenSM requires.
//   weft_sa_client multipath NUMBPATH DGUID...
#include <arpa/inet.h>
#include <infiniband/umad.h>
#include <poll.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

namespace {

void put_gid(uint8_t* p, uint64_t guid) {
  const uint64_t prefix = 0xfe80000000000000ull;
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(prefix >> (56 - 8 * i));
  for (int i = 0; i < 8; ++i) p[8 + i] = uint8_t(guid >> (56 - 8 * i));
}

// One SA request from this port to the SM: `fill` writes the MAD (given the port's GUID),
// `show` reads the answer. Returns the exit status.
int exchange(const std::function<void(uint8_t* mad, uint64_t port_guid)>& fill,
             const std::function<int(const uint8_t* answer, int len, uint64_t port_guid)>& show) {
  if (umad_init() < 0) return std::perror("umad_init"), 1;
  umad_port_t port;
  if (umad_get_port(nullptr, 0, &port) < 0) return std::perror("umad_get_port"), 1;
  const int fd = umad_open_port(port.ca_name, port.portnum);
  const int agent = fd < 0 ? -1 : umad_register(fd, 0x03, 2, 0, nullptr);
  if (agent < 0) return std::perror("umad_open_port/register"), 1;
  const uint64_t guid = be64toh(port.port_guid);
  std::string buf(umad_size() + 256, '\0');
  uint8_t* m = static_cast<uint8_t*>(umad_get_mad(buf.data()));
  m[0] = 1, m[1] = 0x03, m[2] = 2;  // base version, SubnAdm, class version
  fill(m, guid);
  umad_set_addr(buf.data(), port.sm_lid, 1, 0, 0x80010000);
  if (umad_send(fd, agent, buf.data(), 256, 1000, 2) < 0) return std::perror("umad_send"), 1;
  std::string in(umad_size() + 4096, '\0');
  pollfd p{umad_get_fd(fd), POLLIN, 0};
  if (poll(&p, 1, 5000) <= 0) return std::fprintf(stderr, "no answer\n"), 1;
  int len = int(in.size() - umad_size());
  if (umad_recv(fd, in.data(), &len, 0) < 0 || umad_status(in.data()))
    return std::fprintf(stderr, "no answer (status %d)\n", umad_status(in.data())), 1;
  const uint8_t* a = static_cast<const uint8_t*>(umad_get_mad(in.data()));
  if (std::getenv("WEFT_SA_CLIENT_DUMP"))
    for (int i = 0; i < len; ++i) std::fprintf(stderr, "%02x%s", a[i], i % 16 == 15 ? "\n" : " ");
  const int rc = show(a, len, guid);
  umad_close_port(fd);
  umad_release_port(&port);
  return rc;
}

// GetMulti MultiPathRecord from this port to the GUIDs given (at most 10: one MAD).
int multipath(int argc, char** argv) {
  if (argc < 2 || argc > 11)
    return std::fprintf(stderr, "usage: multipath NUMBPATH DGUID... (1 to 10)\n"), 2;
  return exchange(
      [&](uint8_t* m, uint64_t guid) {
        m[3] = 0x14;                                   // GetMulti
        m[15] = 9;                                     // TID
        m[16] = 0x00, m[17] = 0x3a;                    // MultiPathRecord
        m[24] = 1, m[25] = 1 << 4, m[26] = 1 | 2 | 4;  // RMPP: version 1, DATA, active, first+last
        m[53] = 0x18, m[55] = 0x40;                    // mask: SGIDCount, DGIDCount, NumbPath
        uint8_t* r = m + 56;
        r[5] = uint8_t(std::atoi(argv[0]) & 0x7f);
        r[15] = 1;
        r[16] = uint8_t(argc - 1);
        put_gid(r + 24, guid);
        for (int i = 1; i < argc; ++i) put_gid(r + 24 + 16 * i, std::strtoull(argv[i], nullptr, 0));
      },
      [](const uint8_t* a, int, uint64_t) {
        const int status = a[4] << 8 | a[5];
        const size_t rec = size_t(a[44] << 8 | a[45]) * 8;
        std::printf("status 0x%04x method 0x%02x\n", status, a[3]);
        // One MAD: as many whole records as its payload holds (the RMPP payload length).
        const size_t paylen =
            size_t(a[32]) << 24 | size_t(a[33]) << 16 | size_t(a[34]) << 8 | a[35];
        const size_t bytes = std::min<size_t>(paylen > 20 ? paylen - 20 : 0, 200);
        for (size_t off = 0; rec && off + rec <= bytes; off += rec)
          std::printf("slid %u dlid %u\n", a[56 + off + 42] << 8 | a[56 + off + 43],
                      a[56 + off + 40] << 8 | a[56 + off + 41]);
        return status ? 3 : 0;
      });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: weft_sa_client join|leave|create MGID [full|sendonly]\n"
                 "       weft_sa_client multipath NUMBPATH DGUID...\n");
    return 2;
  }
  const std::string op = argv[1];
  if (op == "multipath") return multipath(argc - 2, argv + 2);
  uint8_t mgid[16];
  if (inet_pton(AF_INET6, argv[2], mgid) != 1) return std::fprintf(stderr, "bad MGID\n"), 2;
  if (op != "join" && op != "leave" && op != "create")
    return std::fprintf(stderr, "unknown op\n"), 2;
  const uint8_t state = argc > 3 && std::string(argv[3]) == "sendonly" ? 4 : 1;
  return exchange(
      [&](uint8_t* m, uint64_t guid) {
        m[3] = op == "leave" ? 0x15 : 0x02;
        m[15] = 7;                   // TID
        m[16] = 0x00, m[17] = 0x38;  // MCMemberRecord
        m[55] = 0x03, m[53] = 0x01;  // component mask: MGID, PortGID, JoinState (bit 16)
        uint8_t* r = m + 56;
        std::memcpy(r, mgid, 16);
        put_gid(r + 16, guid);
        r[48] = uint8_t(2 << 4 | state);
        if (op == "create") {
          // And Q_Key (bit 2), TClass (6), P_Key (7), SL (12), FlowLabel (13), HopLimit (14).
          m[55] = 0xC7, m[54] = 0x70;
          r[32] = 0x00, r[33] = 0x00, r[34] = 0x0b, r[35] = 0x1b;  // Q_Key
          r[40] = 0xff, r[41] = 0xff;                              // P_Key
        }
      },
      [](const uint8_t* a, int, uint64_t guid) {
        char gid[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, a + 56, gid, sizeof gid);
        std::printf("status 0x%04x mlid 0x%04x mgid %s port 0x%016llx\n", a[4] << 8 | a[5],
                    a[56 + 36] << 8 | a[56 + 37], gid, (unsigned long long)guid);
        return (a[4] | a[5]) ? 3 : 0;
      });
}
