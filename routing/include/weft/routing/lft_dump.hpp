// weft/routing/lft_dump.hpp — linear forwarding tables as text, in the format
// `ibroute` prints (and dump_lfts.sh / dump_fts gather for every switch), which
// OpenSM's opensm-lfts.dump also follows closely. Reading one lets the analyzer
// grade tables that another SM programmed; writing one lets any tool that reads
// ibroute output read weft's.
//
//   Unicast lids [0x0-0x9] of switch Lid 3 guid 0x0002c90300001000 (leaf0):
//     Lid  Out   Destination
//          Port     Info
//   0x0001 001 : (Channel Adapter portguid 0x0002c90300000101: 'h0')
//   ...
//   9 valid lids dumped
#pragma once

#include <iosfwd>
#include <string>

#include "weft/routing/engine.hpp"

namespace weft::routing {

struct LftDump {
  Tables tables;
  size_t switches = 0;           // switch sections read
  size_t entries = 0;            // (switch, LID) entries read
  size_t lids_learned = 0;       // port LIDs taken from the destination columns
  size_t ports_without_lid = 0;  // ports the dump names no LID for (they lose theirs)
};

// Reads a dump of the switches of `f` (matched by node GUID). Where an entry
// names its destination port GUID, the port's LID is set in `f` from it, so a
// dump taken on a live fabric grades against a topology file without LIDs.
// Errors name the line: a section for a GUID not in `f`, an entry outside a
// section, a port the switch does not have, a LID out of the unicast range.
// When the dump names destinations, its LIDs replace all of `f`'s.
Result<LftDump> read_lft_dump(std::istream& in, fabric::Fabric& f, const std::string& origin);

// Writes every switch's table, ibroute style, with destinations resolved from `f`.
void write_lft_dump(std::ostream& out, const fabric::Fabric& f, const Tables& t);

}  // namespace weft::routing
