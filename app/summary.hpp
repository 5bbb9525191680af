// What `weft sm` and `weft sim` print: the sweep summary, and the discovered model as
// sorted text (--dump-model), the same for any transport that found the same fabric.
#pragma once

#include <boost/program_options.hpp>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "weft/sm/subnet_manager.hpp"

namespace weft::app {

void print_summary(const sm::SweepReport& r, const mad::EngineStats& s);
std::string model_text(const fabric::Fabric& f);
// The flow-level traffic lines of a `weft route --json` object (or any object with a
// "traffic" member, and "traffic_rerouted" after failures): per pattern, static beside
// adaptive.
void print_traffic(const nlohmann::json& j);
// Writes model_text to --dump-model's file, when given.
Result<void> dump_model(const boost::program_options::variables_map& vm,
                        const sm::SubnetSnapshot* snap);

}  // namespace weft::app
