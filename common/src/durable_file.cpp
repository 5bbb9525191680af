#include "weft/durable_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace weft {

namespace {

std::string err(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

}  // namespace

Result<void> write_file_durably(const std::string& path, std::string_view text, mode_t mode) {
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return fail(Errc::kIo, dir.string() + ": cannot create: " + ec.message());
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return fail(Errc::kIo, err(tmp + ": cannot write"));
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      const std::string e = err(tmp + ": write");
      ::close(fd);
      ::unlink(tmp.c_str());
      return fail(Errc::kIo, e);
    }
    off += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0) {
    const std::string e = err(tmp + ": fsync");
    ::close(fd);
    ::unlink(tmp.c_str());
    return fail(Errc::kIo, e);
  }
  if (::close(fd) != 0) return fail(Errc::kIo, err(tmp + ": close"));
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return fail(Errc::kIo, err("rename " + tmp + " -> " + path));
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return fail(Errc::kIo, err(dir.string() + ": cannot open to fsync"));
  const int r = ::fsync(dfd);
  ::close(dfd);
  if (r != 0) return fail(Errc::kIo, err(dir.string() + ": fsync"));
  return {};
}

}  // namespace weft
