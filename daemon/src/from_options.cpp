#include "weft/daemon/from_options.hpp"

#include <algorithm>

#include "weft/sm/documents.hpp"

namespace weft::daemon {

Result<std::shared_ptr<store::StateStore>> state_store_from_options(
    const config::Values& v, const std::string& self, const std::string& rest_partition_file,
    std::vector<store::StateDoc> more) {
  store::StateStoreOptions o;
  o.paths["partitions.rest.conf"] = rest_partition_file;
  o.docs = sm::state_documents();
  for (auto& d : more) o.docs.push_back(std::move(d));
  o.self = self;
  o.etcd.cacert = v.get_str("etcd_cacert");
  o.etcd.cert = v.get_str("etcd_cert");
  o.etcd.key = v.get_str("etcd_key");
  o.etcd.user = v.get_str("etcd_user");
  o.etcd.password = v.get_str("etcd_password");
  if (const auto colon = o.etcd.user.find(':'); colon != std::string::npos) {
    o.etcd.password = o.etcd.user.substr(colon + 1);
    o.etcd.user.resize(colon);
  }
  const long interval = v.get_int("sweep_interval");
  const long lease = v.get_int("state_store_lease_s");
  // The lease outlives the quiet between two light sweeps, whose MADs keep it renewed.
  o.lease_s = static_cast<int>(lease ? lease : std::max(10L, 2 * interval + 5));
  auto st = store::make_state_store(v.get_str("state_store"), v.get_str("state_dir"), std::move(o));
  if (!st) return fail(st.error().code, v.origin("state_store") + ": " + st.error().message);
  return st;
}

}  // namespace weft::daemon
