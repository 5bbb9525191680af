// weft/mad/asio_driver.hpp — the daemon's driver: one Boost.Asio io_context owns the
// SM. While SMPs are on the wire the loop itself pumps the transport, in slices of at
// most 2 ms (or 512 MADs) posted one after another, so other handlers run between
// them: each reply is taken and the window refilled on one thread, with no hand-over
// per MAD (on the radix-56 tree, 4 million SMPs, a hand-over per MAD cost two thirds
// of the bring-up). When nothing is on the wire, a reader thread blocks in the
// transport's receive and posts what comes (SA requests, traps, SMInfo) into the loop
// (the umad fd cannot be registered with Asio itself: under libumad2sim it is a number
// only its poll() wrapper knows). One of the two receives at a time. The engine's
// timeouts are a steady_timer; routing runs on a worker thread and its result is
// posted back. Everything that touches the SM — completions, SA answers, commands —
// runs on the loop's thread.
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
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "weft/mad/driver.hpp"

namespace weft::mad {

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
  void post(std::function<void()> fn) override;

  // What the transport's failure was, once it failed.
  const std::optional<Error>& transport_error() const { return error_; }

 private:
  void service();  // on the loop: the engine's sends and timeouts, idle waiters
  void arm_timer();
  void read_loop(std::stop_token st);
  // On the loop: one slice of receiving, delivering and sending; posts the next while
  // anything is on the wire.
  void pump();
  void kick_pump();
  void fail_transport(const Error& e);
  void set_pumping(bool on);
  static constexpr size_t kBatch = 64;  // MADs the reader hands to the loop at once, at most
  static constexpr size_t kSliceMads = 512;
  static constexpr auto kSlice = std::chrono::milliseconds(2);

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
  bool pump_posted_ = false;
  std::mutex rx_mu_;  // held by whoever is in the transport's receive
  std::mutex state_mu_;
  std::condition_variable_any state_cv_;
  bool pumping_ = false;  // under state_mu_: the loop pumps; the reader waits
};

}  // namespace weft::mad
