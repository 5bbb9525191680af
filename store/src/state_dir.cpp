#include "weft/store/state_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace weft::store {

namespace {

std::string read_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s(buf, n > 0 ? size_t(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.find_first_not_of("0123456789") == std::string::npos ? s : std::string();
}

}  // namespace

Result<StateDir> StateDir::acquire(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::create_directories(path, ec))
    std::filesystem::permissions(path, std::filesystem::perms(0750), ec);
  if (ec) return fail(Errc::kIo, "state directory " + path + ": cannot create: " + ec.message());
  const std::string lock = path + "/lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0)
    return fail(Errc::kIo,
                "state directory " + path + ": cannot open " + lock + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    const std::string pid = read_pid(fd);
    ::close(fd);
    if (e == EWOULDBLOCK)
      return fail(Errc::kInvalidInput,
                  "state directory " + path + " is in use by another weft" +
                      (pid.empty() ? std::string() : " (pid " + pid + ")") +
                      ": each SM needs a state directory of its own (--state-dir, state_dir)");
    return fail(Errc::kIo,
                "state directory " + path + ": cannot lock " + lock + ": " + std::strerror(e));
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) != ssize_t(me.size())) {
    const int e = errno;
    ::close(fd);
    return fail(Errc::kIo,
                "state directory " + path + ": cannot write " + lock + ": " + std::strerror(e));
  }
  return StateDir(path, fd);
}

StateDir::~StateDir() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace weft::store
