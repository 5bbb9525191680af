// Trap Notices by number: the DataDetails layouts of IBTA vol. 1, 14.2.5.1 (byte 10 on).
#include "weft/sm/traps.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace weft::sm {

namespace {

uint16_t be16(const mad::SmpData& d, size_t at) {
  return uint16_t(d[at] << 8 | d[at + 1]);
}
uint32_t be32(const mad::SmpData& d, size_t at) {
  return uint32_t(d[at]) << 24 | uint32_t(d[at + 1]) << 16 | uint32_t(d[at + 2]) << 8 | d[at + 3];
}
uint64_t be64(const mad::SmpData& d, size_t at) {
  return uint64_t(be32(d, at)) << 32 | be32(d, at + 4);
}

constexpr size_t kDetails = 10;  // DataDetails start within the Notice

}  // namespace

Trap decode_trap(const mad::SmpData& d) {
  Trap t;
  t.generic = d[0] & 0x80;
  t.type = d[0] & 0x7f;
  t.producer = uint32_t(d[1]) << 16 | uint32_t(d[2]) << 8 | d[3];  // or the vendor ID
  t.number = be16(d, 4);
  t.issuer = Lid{be16(d, 6)};
  if (!t.generic) {
    t.vendor = t.producer;
    t.producer = 0;
    return t;
  }
  const size_t x = kDetails;
  switch (t.number) {
    case 128:
      t.lid = Lid{be16(d, x)};
      break;
    case 129:
    case 130:
    case 131:
      t.lid = Lid{be16(d, x + 2)};
      t.port = d[x + 4];
      break;
    case 144:
      t.lid = Lid{be16(d, x + 2)};
      t.local_changes = d[x + 5] & 1;
      t.cap_mask = be32(d, x + 6);
      t.change_flags = be16(d, x + 10);
      break;
    case 145:
      t.lid = Lid{be16(d, x + 2)};
      t.guid = be64(d, x + 6);
      break;
    case 256:
      t.lid = Lid{be16(d, x + 2)};
      t.method = d[x + 6];
      t.attr_id = be16(d, x + 8);
      t.attr_mod = be32(d, x + 10);
      t.key = be64(d, x + 14);
      t.dr_slid = Lid{be16(d, x + 4)};
      t.dr_notice = d[x + 22] & 0x80;
      t.dr_truncated = d[x + 22] & 0x40;
      if (t.dr_notice) {
        // At most 30 hops fit in the Notice; more is a truncated path (the flag says so).
        t.dr_return.hops = std::min<uint8_t>(d[x + 22] & 0x3f, 30);
        for (uint8_t i = 1; i <= t.dr_return.hops; ++i) t.dr_return.ports[i] = d[x + 22 + i];
      }
      break;
    case 257:
    case 258:
      t.lid = Lid{be16(d, x + 2)};
      t.lid2 = Lid{be16(d, x + 4)};
      t.key = be32(d, x + 6);
      t.sl = d[x + 10] >> 4;
      t.qp1 = be32(d, x + 10) & 0xffffff;
      t.qp2 = be32(d, x + 14) & 0xffffff;
      break;
    case 259:
      t.lid = Lid{be16(d, x + 2)};
      t.lid2 = Lid{be16(d, x + 4)};
      t.key = be16(d, x + 6);
      t.sl = d[x + 8] >> 4;
      t.qp1 = be32(d, x + 8) & 0xffffff;
      t.qp2 = be32(d, x + 12) & 0xffffff;
      t.port = d[x + 50];
      break;
    default:
      break;
  }
  return t;
}

bool Trap::sweep() const {
  return generic && (number == 128 || number == 144 || number == 145);
}

bool Trap::security() const {
  return generic && number >= 256 && number <= 259;
}

std::string Trap::name() const {
  if (!generic) return "vendor trap";
  switch (number) {
    case 128:
      return "link state change";
    case 129:
      return "local link integrity threshold";
    case 130:
      return "excessive buffer overrun threshold";
    case 131:
      return "flow control update watchdog";
    case 144:
      return "capability mask, node description or link enable change";
    case 145:
      return "system image GUID change";
    case 256:
      return "bad M_Key";
    case 257:
      return "bad P_Key";
    case 258:
      return "bad Q_Key";
    case 259:
      return "switch P_Key violation";
  }
  return "trap";
}

std::string Trap::describe() const {
  if (!generic)
    return fmt::format("vendor trap {:#06x} of vendor {:#08x} from LID {}", number, vendor,
                       issuer.value);
  std::string s = fmt::format("trap {} ({}) from LID {}", number, name(), issuer.value);
  switch (number) {
    case 128:
      s += fmt::format(": switch LID {}", lid.value);
      break;
    case 129:
    case 130:
    case 131:
      s += fmt::format(": LID {} port {}", lid.value, port);
      break;
    case 144:
      s += fmt::format(": LID {}, CapabilityMask {:#010x}, changes {:#06x}{}", lid.value, cap_mask,
                       change_flags, local_changes ? ", other local changes" : "");
      break;
    case 145:
      s += fmt::format(": LID {}, system image GUID {:#018x}", lid.value, guid);
      break;
    case 256:
      s += fmt::format(
          ": LID {} got method {:#04x} attribute {:#06x} modifier {:#x} with M_Key "
          "{:#018x}",
          lid.value, method, attr_id, attr_mod, key);
      if (dr_notice)
        s += fmt::format(", sent by directed route from DrSLID {} (return path {}{})",
                         dr_slid.value, dr_return.str(), dr_truncated ? ", truncated" : "");
      break;
    case 257:
    case 258:
    case 259:
      s += fmt::format(": LID {} QP {} -> LID {} QP {}, SL {}, key {:#x}{}", lid.value, qp1,
                       lid2.value, qp2, sl, key,
                       number == 259 ? fmt::format(", switch port {}", port) : std::string());
      break;
  }
  return s;
}

nlohmann::json Trap::to_json() const {
  nlohmann::json j = {{"number", number},      {"generic", generic},  {"type", type},
                      {"name", name()},        {"lid", issuer.value}, {"sweep", sweep()},
                      {"security", security()}};
  if (!generic) {
    j["vendor_id"] = vendor;
    return j;
  }
  if (lid.value) j["port_lid"] = lid.value;
  if (port) j["port"] = port;
  if (number == 144) {
    j["capability_mask"] = cap_mask;
    j["change_flags"] = change_flags;
  }
  if (number == 145) j["system_image_guid"] = hex_guid(guid);
  if (number == 256) {
    j["m_key"] = hex_guid(key);
    j["method"] = method;
    j["attribute"] = attr_id;
    j["attribute_modifier"] = attr_mod;
    if (dr_notice) {
      j["dr_slid"] = dr_slid.value;
      j["return_path"] = dr_return.str();
      j["return_path_truncated"] = dr_truncated;
    }
  }
  if (number >= 257 && number <= 259) {
    j["lid2"] = lid2.value;
    j["key"] = key;
    j["qp1"] = qp1;
    j["qp2"] = qp2;
    j["sl"] = sl;
  }
  return j;
}

}  // namespace weft::sm
