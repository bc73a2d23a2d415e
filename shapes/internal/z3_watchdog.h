// Z3Watchdog: bounds one solver call in wall-clock time by interrupting the
// context from a helper thread.
//
// Why not Z3's own "timeout" parameter: in the Z3 4.8.12 shipped by Debian
// its timer (scoped_timer's thread pool) can deadlock when a timeout fires —
// a check then never returns (Z3Prover/z3 PR #5371, issue #5990; reproduced
// here on nonlinear guard sets). Z3_interrupt is the documented thread-safe
// way to cancel a running check, and the check then answers unknown.
// The "rlimit" resource budget is no substitute: nonlinear arithmetic ran
// for seconds past small budgets in our measurements.
#ifndef SHAPESHIFT_SHAPES_INTERNAL_Z3_WATCHDOG_H_
#define SHAPESHIFT_SHAPES_INTERNAL_Z3_WATCHDOG_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <z3++.h>

namespace shapeshift::internal {

class Z3Watchdog {
 public:
  // Interrupts `ctx` unless destroyed within `timeout_ms`.
  Z3Watchdog(z3::context& ctx, unsigned timeout_ms)
      : thread_([this, &ctx, timeout_ms] {
          std::unique_lock<std::mutex> lock(mu_);
          auto is_done = [this] { return done_; };
          if (cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), is_done)) return;
          // Keep interrupting until the check returns: an interrupt that
          // lands before Z3 has entered the check is not remembered by it.
          do {
            ctx.interrupt();
          } while (!cv_.wait_for(lock, std::chrono::milliseconds(kRepeatMs), is_done));
        }) {}

  ~Z3Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  Z3Watchdog(const Z3Watchdog&) = delete;
  Z3Watchdog& operator=(const Z3Watchdog&) = delete;

 private:
  static constexpr int kRepeatMs = 5;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts after the members it uses exist
};

}  // namespace shapeshift::internal

#endif  // SHAPESHIFT_SHAPES_INTERNAL_Z3_WATCHDOG_H_
