// What `weft sm` and `weft sim` print: the sweep summary, and the discovered model as
// sorted text (--dump-model), the same for any transport that found the same fabric.
#pragma once

#include <boost/program_options.hpp>
#include <string>

#include "weft/sm/subnet_manager.hpp"

namespace weft::app {

void print_summary(const sm::SweepReport& r, const mad::EngineStats& s);
std::string model_text(const fabric::Fabric& f);
// Writes model_text to --dump-model's file, when given.
Result<void> dump_model(const boost::program_options::variables_map& vm,
                        const sm::SubnetSnapshot* snap);

}  // namespace weft::app
