#include "weft/mad/asio_driver.hpp"

#include <boost/asio/post.hpp>
#include <chrono>
#include <memory>

#include "weft/log.hpp"

namespace weft::mad {

namespace asio = boost::asio;

AsioDriver::AsioDriver(asio::io_context& io, MadEngine& eng, Transport& t)
    : io_(io), eng_(eng), t_(t), timer_(io) {
  // submit() runs on the loop; its kick starts the pump there.
  eng_.on_work([this] { kick_pump(); });
}

AsioDriver::~AsioDriver() {
  stop();
  eng_.on_work(nullptr);
}

void AsioDriver::start(std::function<void(const Error&)> on_transport_error) {
  on_error_ = std::move(on_transport_error);
  reader_ = std::jthread([this](std::stop_token st) { read_loop(st); });
}

void AsioDriver::stop() {
  if (reader_.joinable()) {
    reader_.request_stop();  // wakes it from its wait on pumping_ too
    reader_.join();
  }
  workers_.join();  // a routing computation under way finishes first
}

void AsioDriver::set_pumping(bool on) {
  {
    std::lock_guard lk(state_mu_);
    pumping_ = on;
  }
  if (!on) state_cv_.notify_all();
}

void AsioDriver::fail_transport(const Error& e) {
  if (error_) return;
  error_ = e;
  WEFT_LOG(Error, "MAD-0009") << "transport failed: " << e.message;
  eng_.fail_all(e);
  if (on_error_) on_error_(e);
  service();
}

void AsioDriver::read_loop(std::stop_token st) {
  while (!st.stop_requested()) {
    {
      // While the loop pumps, it does the receiving.
      std::unique_lock lk(state_mu_);
      state_cv_.wait(lk, st, [this] { return !pumping_; });
    }
    if (st.stop_requested()) return;
    std::unique_lock rx(rx_mu_);
    // A short receive timeout bounds how long stop() waits for this thread, and how
    // long a starting pump waits for the receive side.
    auto got = t_.receive(std::chrono::milliseconds(5));
    if (!got) {
      asio::post(io_, [this, e = got.error()] { fail_transport(e); });
      return;
    }
    if (!*got) continue;
    // What else has arrived goes in the same post: one hand-over to the loop and one
    // service() per batch, not per MAD.
    auto batch = std::make_shared<std::vector<InMad>>();
    batch->push_back(std::move(**got));
    while (batch->size() < kBatch) {
      auto more = t_.receive(Duration::zero());
      if (!more || !*more) break;  // a failure: the next receive reports it
      batch->push_back(std::move(**more));
    }
    rx.unlock();
    asio::post(io_, [this, batch] {
      for (const auto& in : *batch) eng_.deliver(in);
      service();
      if (!eng_.idle()) kick_pump();
    });
  }
}

void AsioDriver::kick_pump() {
  if (pump_posted_ || error_) return;
  pump_posted_ = true;
  set_pumping(true);
  asio::post(io_, [this] { pump(); });
}

void AsioDriver::pump() {
  pump_posted_ = false;
  if (error_) {
    set_pumping(false);
    return service();
  }
  std::unique_lock rx(rx_mu_, std::try_to_lock);
  if (rx) {
    // The reader waits for rx_mu_ meanwhile: the engine reads between its sends.
    struct Receiving {
      MadEngine& e;
      explicit Receiving(MadEngine& eng) : e(eng) { e.receive_between_sends(true); }
      ~Receiving() { e.receive_between_sends(false); }
    } receiving(eng_);
    const auto t0 = std::chrono::steady_clock::now();
    size_t n = 0;
    while (true) {
      if (auto r = eng_.service(); !r) {
        rx.unlock();
        return fail_transport(r.error());
      }
      if (eng_.idle() || n >= kSliceMads || std::chrono::steady_clock::now() - t0 >= kSlice) break;
      auto got = t_.receive(std::chrono::microseconds(500));
      if (!got) {
        rx.unlock();
        return fail_transport(got.error());
      }
      if (!*got) continue;  // service() expires what timed out
      eng_.deliver(**got);
      ++n;
    }
    rx.unlock();
  } else {
    // The reader is inside a receive (at most 5 ms): try again on the next turn,
    // sending nothing meanwhile (the transport is the reader's until it returns).
    pump_posted_ = true;
    asio::post(io_, [this] { pump(); });
    return;
  }
  service();  // the timer, and the idle waiters (who may submit: kick_pump again)
  if (!eng_.idle() && !error_) {
    if (!pump_posted_) {
      pump_posted_ = true;
      asio::post(io_, [this] { pump(); });
    }
  } else if (!pump_posted_) {
    set_pumping(false);
  }
}

void AsioDriver::service() {
  Result<void> r;
  if (error_) {
    r = std::unexpected(*error_);
  } else {
    r = eng_.service();
    if (!r) {
      error_ = r.error();
      if (on_error_) on_error_(r.error());
    }
  }
  arm_timer();
  if (!eng_.idle() || idle_waiters_.empty()) return;
  // A waiter may start the next phase, which submits and waits again.
  auto waiters = std::exchange(idle_waiters_, {});
  for (auto& w : waiters) w(r);
}

void AsioDriver::arm_timer() {
  const auto due = eng_.next_deadline();
  // A deadline that moved later (each reply moves it) keeps the timer armed for the
  // earlier one: it fires early, service() finds nothing due and arms it again. This
  // spares a cancel and a new wait per MAD. No deadline leaves a harmless early wake.
  if (!due || (armed_ && *armed_ <= *due)) return;
  armed_ = due;
  timer_.expires_at(std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(*due)));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // re-armed or cancelled
    armed_.reset();
    service();
  });
}

void AsioDriver::when_idle(std::function<void(Result<void>)> then) {
  idle_waiters_.push_back(std::move(then));
  asio::post(io_, [this] { service(); });
}

void AsioDriver::post(std::function<void()> fn) {
  asio::post(io_, std::move(fn));
}

void AsioDriver::offload(std::function<void()> work, std::function<void()> then) {
  asio::post(workers_, [this, work = std::move(work), then = std::move(then)]() mutable {
    work();
    asio::post(io_, std::move(then));
  });
}

}  // namespace weft::mad
