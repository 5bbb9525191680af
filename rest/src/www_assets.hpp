// The topology page's files (rest/www), compiled into weft by rest/embed_assets.cmake.
#pragma once

#include <span>
#include <string_view>

namespace weft::rest {

struct Asset {
  std::string_view name;          // "index.html", "topology.js"
  std::string_view content_type;  // as served
  std::string_view data;
};

const Asset* find_asset(std::string_view name);
std::span<const Asset> assets();

}  // namespace weft::rest
