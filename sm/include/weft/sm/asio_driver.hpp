// weft/sm/asio_driver.hpp — the daemon's driver: one Boost.Asio io_context owns the
// SM. A reader thread blocks in the transport's receive and posts each MAD into the
// loop (the umad fd cannot be registered with Asio itself: under libumad2sim it is
// a number only its poll() wrapper knows); the engine's timeouts are a steady_timer;
// routing runs on a worker thread and its result is posted back. Everything that
// touches the SM — completions, SA answers, commands — runs on the loop's thread.
//
//   boost::asio::io_context io;
//   AsioDriver drv(io, sm.engine(), transport);
//   sm.set_driver(drv);
//   drv.start();      // the reader thread
//   io.run();         // until stop()
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "weft/sm/driver.hpp"

namespace weft::sm {

class AsioDriver final : public Driver {
 public:
  AsioDriver(boost::asio::io_context& io, MadEngine& eng, Transport& t);
  ~AsioDriver() override;
  AsioDriver(const AsioDriver&) = delete;
  AsioDriver& operator=(const AsioDriver&) = delete;

  // Starts the reader thread. `on_transport_error` runs on the loop when the
  // transport fails (every request has then failed with the error).
  void start(std::function<void(const Error&)> on_transport_error);
  // Stops the reader (within its receive timeout) and the worker; idempotent.
  void stop();

  void when_idle(std::function<void(Result<void>)> then) override;
  void offload(std::function<void()> work, std::function<void()> then) override;

  // What the transport's failure was, once it failed.
  const std::optional<Error>& transport_error() const { return error_; }

 private:
  void service();  // on the loop: the engine's sends and timeouts, idle waiters
  void arm_timer();
  void read_loop(std::stop_token st);
  static constexpr size_t kBatch = 64;  // MADs handed to the loop at once, at most

  boost::asio::io_context& io_;
  MadEngine& eng_;
  Transport& t_;
  boost::asio::steady_timer timer_;
  std::optional<TimePoint> armed_;  // the deadline the timer waits for
  boost::asio::thread_pool workers_{1};
  std::jthread reader_;
  std::vector<std::function<void(Result<void>)>> idle_waiters_;
  std::function<void(const Error&)> on_error_;
  std::optional<Error> error_;
  bool service_posted_ = false;
};

}  // namespace weft::sm
