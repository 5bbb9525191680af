// Watches P_Key tables fill: polls each given LID's P_KeyTable block 0 with LID-routed
// SMPs (libibmad, on ibsim under libumad2sim) until every port holds `--pkey`, then
// prints when (CLOCK_MONOTONIC, the clock Python's time.monotonic() reads), so a
// benchmark can time a partition change from its own trigger to the last port, for
// any SM, at the polling speed of one process rather than one process per query.
//
//   weft_pkey_watch --pkey 0x0a12 [--timeout 120] LID...
//   -> "ready" once it polls, then "done <seconds>" (or "timeout" and exit status 1)
#include <infiniband/mad.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  long pkey = -1;
  double timeout = 120;
  std::vector<int> lids;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--pkey" && i + 1 < argc)
      pkey = std::strtol(argv[++i], nullptr, 0) & 0x7fff;
    else if (a == "--timeout" && i + 1 < argc)
      timeout = std::atof(argv[++i]);
    else
      lids.push_back(std::atoi(argv[i]));
  }
  if (pkey <= 0 || lids.empty()) {
    std::fprintf(stderr, "usage: weft_pkey_watch --pkey PKEY [--timeout S] LID...\n");
    return 2;
  }
  int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS};
  ibmad_port* port = mad_rpc_open_port(nullptr, 0, classes, 2);
  if (!port) return std::perror("mad_rpc_open_port"), 1;
  std::printf("ready\n");
  std::fflush(stdout);
  const double t0 = now_s();
  std::vector<int> pending = lids;
  while (!pending.empty()) {
    if (now_s() - t0 > timeout) {
      std::printf("timeout: %zu of %zu ports lack 0x%04lx\n", pending.size(), lids.size(), pkey);
      return 1;
    }
    std::vector<int> still;
    for (int lid : pending) {
      ib_portid_t to{};
      ib_portid_set(&to, lid, 0, 0);
      uint8_t data[IB_SMP_DATA_SIZE] = {};
      bool has = false;
      if (smp_query_via(data, &to, IB_ATTR_PKEY_TBL, 0, 200, port))
        for (int k = 0; k < 32; ++k) has |= ((data[2 * k] << 8 | data[2 * k + 1]) & 0x7fff) == pkey;
      if (!has) still.push_back(lid);
    }
    pending.swap(still);
  }
  std::printf("done %.6f\n", now_s());
  mad_rpc_close_port(port);
  return 0;
}
