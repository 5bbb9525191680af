// weft/mad/driver.hpp — how the SM waits. A sweep is a sequence of phases; between
// two phases the SM waits for every MAD of the first to complete, and routing runs
// off the SM's loop. A Driver provides both. SyncDriver pumps the engine in place
// (tests, the in-process simulator: deterministic, nothing else runs meanwhile);
// AsioDriver (asio_driver.hpp) is the daemon's event loop, which keeps answering
// SMInfo and SA queries while a sweep waits.
//
//   SyncDriver d(engine);
//   d.when_idle([](Result<void> r) { /* every completion has run */ });
#pragma once

#include <functional>

#include "weft/mad/mad_engine.hpp"
#include "weft/result.hpp"

namespace weft::mad {

class Driver {
 public:
  virtual ~Driver() = default;
  // `then` runs once the engine has nothing queued or on the wire, every completion
  // done; with the transport's error if it failed meanwhile.
  virtual void when_idle(std::function<void(Result<void>)> then) = 0;
  // `work` runs off the SM's loop (pure computation: routing); `then` runs back on it.
  virtual void offload(std::function<void()> work, std::function<void()> then) = 0;
  // `fn` runs on the SM's loop after what it is doing now (with the loop's driver: after
  // the batch of MADs being delivered), so work that many MADs ask for is done once.
  virtual void post(std::function<void()> fn) = 0;
};

class SyncDriver final : public Driver {
 public:
  explicit SyncDriver(MadEngine& eng) : eng_(eng) {}
  void when_idle(std::function<void(Result<void>)> then) override { then(eng_.run()); }
  void offload(std::function<void()> work, std::function<void()> then) override {
    work();
    then();
  }
  void post(std::function<void()> fn) override { fn(); }

 private:
  MadEngine& eng_;
};

}  // namespace weft::mad
