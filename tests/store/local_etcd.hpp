// Test helper: a private etcd (Debian's etcd-server) on loopback ports of its own, with
// a scratch data directory; stopped by PID when the test ends, failed or not, and
// restartable on the same ports and data (an outage and its end).
//
//   LocalEtcd etcd;                       // started; ASSERTs in the caller on failure
//   EtcdClient c(etcd.config("/weft/"));  // etcd.url("/weft") for state_store
//   etcd.kill();  etcd.start();           // down, then back with what it had
//   LocalEtcd tls(LocalEtcd::kTls);       // https, client certificates required
//                                         // (tls.cacert(), client_cert(), client_key())
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "weft/store/etcd.hpp"

namespace weft::testing {

class LocalEtcd {
 public:
  enum Mode { kPlain, kTls };
  explicit LocalEtcd(Mode mode = kPlain) : tls_(mode == kTls) {
    char tmpl[] = "/tmp/weft-etcd-XXXXXX";
    dir_ = ::mkdtemp(tmpl) ? tmpl : "";
    client_port_ = free_port();
    peer_port_ = free_port();
    if (tls_ && !make_certs()) return;
    start();
  }
  ~LocalEtcd() {
    kill(SIGKILL);
    std::error_code ec;
    if (!dir_.empty() && !std::getenv("WEFT_KEEP")) std::filesystem::remove_all(dir_, ec);
  }
  LocalEtcd(const LocalEtcd&) = delete;
  LocalEtcd& operator=(const LocalEtcd&) = delete;

  // Starts etcd and waits (up to 20 s) until it answers; false (and a test failure
  // naming its log) when it does not.
  bool start() {
    const std::string client =
        (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(client_port_);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
    std::vector<std::string> args = {"etcd",
                                     "--name",
                                     "weft-test",
                                     "--data-dir",
                                     dir_ + "/data",
                                     "--listen-client-urls",
                                     client,
                                     "--advertise-client-urls",
                                     client,
                                     "--listen-peer-urls",
                                     peer,
                                     "--initial-advertise-peer-urls",
                                     peer,
                                     "--initial-cluster",
                                     "weft-test=" + peer,
                                     "--logger",
                                     "zap"};
    if (tls_)
      args.insert(args.end(),
                  {"--cert-file", dir_ + "/server.pem", "--key-file", dir_ + "/server.key",
                   "--trusted-ca-file", cacert(), "--client-cert-auth"});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string out = dir_ + "/etcd.out";
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      // Killed with the test, even one that crashes before its destructors run.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      const int null = ::open("/dev/null", O_RDONLY);
      if (fd < 0 || null < 0) ::_exit(127);
      ::dup2(null, 0);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execvp("etcd", argv.data());
      ::_exit(127);
    }
    if (pid_ < 0) {
      ADD_FAILURE() << "cannot start etcd: fork: " << std::strerror(errno);
      pid_ = 0;
      return false;
    }
    store::EtcdConfig probe = config("/");
    if (tls_) {
      probe.cert = client_cert();
      probe.key = client_key();
    }
    store::EtcdClient c(probe);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      if (c.range("/weft-test-ping")) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        ADD_FAILURE() << "etcd exited at once (status " << status
                      << "; is Debian's etcd-server installed?); see " << out;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "etcd did not answer in 20 s; see " << dir_ << "/etcd.out";
    return false;
  }

  // Stops it by PID (SIGKILL: as a crash; SIGTERM: as an admin would).
  void kill(int sig = SIGKILL) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status = 0;
    for (int i = 0; i < 500 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (::waitpid(pid_, &status, WNOHANG) == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    pid_ = 0;
  }

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  std::string url(const std::string& prefix) const { return "etcd://" + endpoint() + prefix; }
  // A client's configuration: for kTls, with the CA but no client certificate.
  store::EtcdConfig config(const std::string& prefix) const {
    store::EtcdConfig c;
    c.endpoints = {endpoint()};
    c.prefix = prefix;
    if (tls_) c.cacert = cacert();
    return c;
  }
  std::string cacert() const { return dir_ + "/ca.pem"; }
  std::string client_cert() const { return dir_ + "/client.pem"; }
  std::string client_key() const { return dir_ + "/client.key"; }
  const std::string& dir() const { return dir_; }

 private:
  static int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
    ::close(fd);
    return port;
  }

  // A CA, a server certificate for 127.0.0.1 and a client certificate, by openssl(1).
  // The server's is for client authentication too: etcd 3.4's JSON gateway dials etcd's
  // own gRPC port with it.
  bool make_certs() {
    const std::string d = dir_;
    const std::string cmd =
        "set -e; cd '" + d +
        "'; exec >certs.log 2>&1; "
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=weft-test-ca "
        "-keyout ca.key -out ca.pem; "
        "printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n' > "
        "server.ext; "
        "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out "
        "server.csr; "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile server.ext -out server.pem; "
        "printf 'extendedKeyUsage=clientAuth\\n' > client.ext; "
        "openssl req -newkey rsa:2048 -nodes -subj /CN=weft -keyout client.key -out client.csr; "
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile client.ext -out client.pem";
    if (std::system(cmd.c_str()) != 0) {
      ADD_FAILURE() << "openssl could not make the test certificates; see " << d << "/certs.log";
      return false;
    }
    return true;
  }

  bool tls_ = false;
  std::string dir_;
  int client_port_ = 0, peer_port_ = 0;
  pid_t pid_ = 0;
};

}  // namespace weft::testing
