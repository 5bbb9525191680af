// PathRecord throughput of weft's SA, in process: an MPI job start on 1,000 nodes
// with 4 ranks each, every rank resolving a path to every other node (4 x 1,000 x
// 999 = 3,996,000 PathRecord Gets), answered from the snapshot of a bring-up on
// the in-process simulator. Prints one line of figures; the bench script puts
// OpenSM's saquery rate beside it.
//
//   weft_sa_bench [--spec ft2:leaves=40,spines=20,hosts=25] [--ranks 4]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "weft/daemon/managers.hpp"
#include "weft/sa/sa.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/sm/subnet_manager.hpp"

using namespace weft;

int main(int argc, char** argv) {
  std::string spec = "ft2:leaves=40,spines=20,hosts=25";
  int ranks = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--spec")) spec = argv[i + 1];
    if (!std::strcmp(argv[i], "--ranks")) ranks = std::atoi(argv[i + 1]);
  }
  auto f = simulator::make_fabric(spec);
  if (!f) {
    std::fprintf(stderr, "%s\n", f.error().message.c_str());
    return 2;
  }
  simulator::SimFabric sim(std::move(*f));
  simulator::SimTransport t(sim, {});
  const auto dir = std::filesystem::temp_directory_path() / "weft-sa-bench";
  std::filesystem::remove_all(dir);
  sm::SmOptions o;
  o.state_dir = dir.string();
  daemon::Managers managers(t, o);
  sm::SubnetManager& smgr = managers.sm();
  auto rep = smgr.sweep();
  std::filesystem::remove_all(dir);
  if (!rep || !rep->subnet_up) {
    std::fprintf(stderr, "bring-up failed\n");
    return 1;
  }
  sm::SaContext ctx;
  ctx.snap = smgr.snapshot();
  const auto& fab = ctx.snap->fabric;
  std::vector<uint16_t> lids;
  for (fabric::NodeIndex n = 0; n < fab.size(); ++n)
    if (!fab.node(n).is_switch()) lids.push_back(fab.node(n).ports[1].attrs.lid.value);

  std::vector<uint8_t> req(256, 0);
  req[0] = 1;
  req[1] = sa::kClassSa;
  req[2] = 2;
  req[3] = mad::kMethodGet;
  req[17] = sa::kSaPathRecord & 0xff;
  req[16] = sa::kSaPathRecord >> 8;
  req[55] = 0x30;  // component mask (bytes 48-55): DLID (bit 4) and SLID (bit 5)
  sa::SaAgent sa;
  size_t queries = 0, answered = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < ranks; ++r)
    for (uint16_t s : lids)
      for (uint16_t d : lids) {
        if (s == d) continue;
        req[sa::kSaHeader + 40] = uint8_t(d >> 8);
        req[sa::kSaHeader + 41] = uint8_t(d);
        req[sa::kSaHeader + 42] = uint8_t(s >> 8);
        req[sa::kSaHeader + 43] = uint8_t(s);
        auto ans = sa.answer(req, ctx);
        ++queries;
        if (ans && (*ans)[4] == 0 && (*ans)[5] == 0) ++answered;
      }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "weft in-process PathRecord: %zu CAs, %zu queries, %zu answered, %.2f s, %.0f queries/s\n",
      lids.size(), queries, answered, s, queries / s);
  return answered == queries ? 0 : 1;
}
