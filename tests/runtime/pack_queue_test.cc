// PackQueue (runtime/pack_queue.h): jobs run in order, on a thread of their
// own when the compile has more than one, all of them by Finish(); the first
// error is Finish's and stops the rest.
#include "runtime/pack_queue.h"

#include <omp.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shapeshift::runtime {
namespace {

TEST(PackQueueTest, JobsRunInOrderOnAThreadBesideTheAddingOneWithTheCompilesTeamSize) {
  PackQueue queue(2);
  std::vector<int> order;
  std::vector<std::thread::id> ran_on;
  std::vector<int> teams;
  absl::Notification release;
  for (int i = 0; i < 5; ++i) {
    queue.Add([&, i] {
      if (i == 0) release.WaitForNotification();  // the adding thread goes on meanwhile
      order.push_back(i);
      ran_on.push_back(std::this_thread::get_id());
      teams.push_back(omp_get_max_threads());
      return absl::OkStatus();
    });
  }
  release.Notify();  // reached only if Add did not run the first job itself
  ASSERT_TRUE(queue.Finish().ok());
  EXPECT_THAT(order, ::testing::ElementsAre(0, 1, 2, 3, 4));
  for (std::thread::id id : ran_on) EXPECT_NE(id, std::this_thread::get_id());
  for (int team : teams) EXPECT_EQ(team, 2);
}

TEST(PackQueueTest, OneThreadRunsEachJobAsItIsAdded) {
  PackQueue queue(1);
  int ran = 0;
  queue.Add([&] {
    ++ran;
    return absl::OkStatus();
  });
  EXPECT_EQ(ran, 1);
  EXPECT_TRUE(queue.Finish().ok());
}

TEST(PackQueueTest, TheFirstErrorIsFinishsAndStopsTheJobsAfterIt) {
  for (int threads : {1, 2}) {
    PackQueue queue(threads);
    std::vector<int> ran;
    for (int i = 0; i < 4; ++i) {
      queue.Add([&, i]() -> absl::Status {
        ran.push_back(i);
        if (i == 1) return absl::ResourceExhaustedError("no memory for pack 1");
        if (i == 2) return absl::InternalError("pack 2");
        return absl::OkStatus();
      });
    }
    absl::Status s = queue.Finish();
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << threads;
    EXPECT_EQ(s.message(), "no memory for pack 1");
    EXPECT_THAT(ran, ::testing::ElementsAre(0, 1)) << threads;
  }
}

// A Build that fails early destroys the queue with packs in it: the one
// running finishes before the destructor returns (it writes into the
// builder); the ones not started are dropped.
TEST(PackQueueTest, DestroyingTheQueueWaitsForTheRunningJob) {
  std::atomic<bool> finished{false};
  absl::Notification started, release;
  std::thread releaser;
  {
    PackQueue queue(2);
    queue.Add([&] {
      started.Notify();
      release.WaitForNotification();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      finished = true;
      return absl::OkStatus();
    });
    for (int i = 0; i < 3; ++i) queue.Add([] { return absl::OkStatus(); });
    started.WaitForNotification();
    releaser = std::thread([&] { release.Notify(); });
  }
  EXPECT_TRUE(finished.load());
  releaser.join();
}

}  // namespace
}  // namespace shapeshift::runtime
