// The SM's documents in the state store: read together, written as the sweep goes.
#include "weft/sm/state_books.hpp"

#include <filesystem>

#include "weft/log.hpp"
#include "weft/text_file.hpp"

namespace weft::sm {

StateBooks::StateBooks(std::shared_ptr<store::StateStore> store, std::string state_dir,
                       const MKeyOptions& mkey)
    : store_(std::move(store)), state_dir_(std::move(state_dir)), keys_(mkey), down_(store_) {}

Result<bool> StateBooks::load(const MKeyOptions& mkey) {
  if (loaded_) return false;
  const std::string db_path = store_->path("guid2lid");
  auto w = lids_.load(db_path);
  if (!w) return std::unexpected(w.error());
  for (const auto& s : *w) WEFT_LOG(Warn, "LID-0001") << s;
  loaded_ = true;
  WEFT_LOG(Info, "LID-0002") << db_path << ": " << lids_.entries().size() << " GUID->LID entries";
  if (auto r = down_.load(); !r) return std::unexpected(r.error());
  auto k = keys_.load(state_dir_);
  if (!k) return std::unexpected(k.error());
  for (const auto& s : *k) WEFT_LOG(Warn, "MKY-0001") << s;
  if (mkey.enabled() || !keys_.guid2mkey().empty())
    WEFT_LOG(Info, "MKY-0002") << state_dir_ << "/guid2mkey: " << keys_.guid2mkey().size()
                               << " port keys, " << keys_.links() << " links in neighbors; "
                               << "M_Key " << (mkey.per_port ? "per port" : "shared")
                               << ", protection level " << int(mkey.protect_bits) << ", lease "
                               << mkey.lease_period << " s";
  return true;
}

bool StateBooks::changed(const std::string& name) {
  if (name != "guid2lid" && name != "guid2mkey" && name != "neighbors" && name != "ports-down" &&
      name != "mcast-groups" && name != "sa-records")
    return false;
  loaded_ = false;
  return true;
}

void StateBooks::save_lids(SweepReport& rep) {
  if (auto r = store_->write("guid2lid", lids_.text()); !r)
    add_problem(rep, "LIDs not persisted: " + r.error().message + " (a restart may renumber ports)",
                "LID-0003");
}

void StateBooks::save_keys(SweepReport& rep) {
  if (!keys_.dirty()) return;
  if (auto r = keys_.save(*store_); !r)
    add_problem(rep,
                "M_Keys not persisted: " + r.error().message +
                    " (after a restart, ports keyed since are reached once their lease runs out)",
                "MKY-0003");
}

Result<std::optional<std::string>> StateBooks::read_doc(const std::string& name) {
  const std::string path = store_->path(name);
  if (!std::filesystem::exists(path)) return std::optional<std::string>{};
  auto text = read_text_file(path);
  if (!text) return std::unexpected(text.error());
  texts_[name] = *text;
  return std::optional<std::string>(std::move(*text));
}

Result<bool> StateBooks::save_doc(const std::string& name, std::string text) {
  if (auto it = texts_.find(name); it != texts_.end() && it->second == text) return false;
  if (auto r = store_->write(name, text); !r) return std::unexpected(r.error());
  texts_[name] = std::move(text);
  return true;
}

Result<std::optional<McDb>> StateBooks::read_groups() {
  auto text = read_doc("mcast-groups");
  if (!text) return std::unexpected(text.error());
  if (!*text) return std::optional<McDb>{};
  auto db = McDb::parse(**text, store_->path("mcast-groups"));
  if (!db) return std::unexpected(db.error());
  return std::optional<McDb>(std::move(*db));
}

void StateBooks::heard(uint64_t mads) {
  if (mads == heard_) return;
  heard_ = mads;
  store_->fabric_contact();
}

}  // namespace weft::sm
