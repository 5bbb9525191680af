// weft_smp_wipe — what a switch reboot (or a rogue client) leaves, done from a second
// client on ibsim, which has no reboot command: the switch at a directed route gets
// its first LFT block dropped (every entry 0xFF) and LinearFDBTop 0.
//
//   SIM_HOST=h3-1 LD_PRELOAD=.../libumad2sim.so weft_smp_wipe 0,1
#include <infiniband/mad.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: weft_smp_wipe DRPATH (e.g. 0,1)\n");
    return 2;
  }
  int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS};
  ibmad_port* port = mad_rpc_open_port(nullptr, 0, classes, 2);
  if (!port) return std::perror("mad_rpc_open_port"), 1;
  ib_portid_t to{};
  if (str2drpath(&to.drpath, argv[1], 0, 0) < 0) {
    std::fprintf(stderr, "bad directed route %s\n", argv[1]);
    return 2;
  }
  uint8_t lft[IB_SMP_DATA_SIZE];
  std::memset(lft, 0xFF, sizeof lft);
  if (!smp_set_via(lft, &to, IB_ATTR_LINEARFORWTBL, 0, 1000, port)) {
    std::fprintf(stderr, "LFT block 0 Set via %s failed\n", argv[1]);
    return 1;
  }
  uint8_t si[IB_SMP_DATA_SIZE] = {};
  if (!smp_query_via(si, &to, IB_ATTR_SWITCH_INFO, 0, 1000, port)) {
    std::fprintf(stderr, "SwitchInfo Get via %s failed\n", argv[1]);
    return 1;
  }
  const unsigned top = mad_get_field(si, 0, IB_SW_LINEAR_FDB_TOP_F);
  mad_set_field(si, 0, IB_SW_LINEAR_FDB_TOP_F, 0);
  if (!smp_set_via(si, &to, IB_ATTR_SWITCH_INFO, 0, 1000, port)) {
    std::fprintf(stderr, "SwitchInfo Set via %s failed\n", argv[1]);
    return 1;
  }
  std::printf("wiped: LFT block 0 dropped, LinearFDBTop %u -> 0\n", top);
  mad_rpc_close_port(port);
  return 0;
}
