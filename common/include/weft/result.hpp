// weft/result.hpp — the one result type for every fallible call that crosses a
// module boundary.
//
//   weft::Result<Fabric> r = read_netfile(path);
//   if (!r) { log_error(r.error().message); return std::unexpected(r.error()); }
//   Fabric f = std::move(*r);
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace weft {

enum class Errc {
  kInvalidInput,  // a file, argument or body the user gave is wrong
  kIo,            // a file or device could not be read or written
  kTimeout,       // a MAD (or anything waited for) did not come back
  kBadReply,      // a MAD came back malformed or with an error status
  kUnreachable,   // part of the fabric could not be reached
  kUnsupported,   // valid input weft does not handle (yet)
  kInternal,      // a programmer error caught at run time
};

const char* errc_name(Errc c);

struct Error {
  Errc code = Errc::kInternal;
  std::string message;
};

template <class T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(Errc code, std::string message) {
  return std::unexpected<Error>(Error{code, std::move(message)});
}

inline const char* errc_name(Errc c) {
  switch (c) {
    case Errc::kInvalidInput:
      return "invalid-input";
    case Errc::kIo:
      return "io";
    case Errc::kTimeout:
      return "timeout";
    case Errc::kBadReply:
      return "bad-reply";
    case Errc::kUnreachable:
      return "unreachable";
    case Errc::kUnsupported:
      return "unsupported";
    case Errc::kInternal:
      return "internal";
  }
  return "unknown";
}

}  // namespace weft
