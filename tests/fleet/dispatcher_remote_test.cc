// The Dispatcher on a real Redis: a second dispatcher (another process, as
// far as the remote is concerned: its own connection and lease token) loads
// every entry with no compile and identical outputs; four dispatchers that
// miss the same shapes at once compile each once between them; a poisoned
// record is refused and rebuilt; killing the server mid-trace loses no request.
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "runtime/specialization/dispatcher.h"
#include "tests/fleet/redis_test_util.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

using shapeshift::testing::OwnRedisServer;
using shapeshift::testing::RedisClient;

constexpr char kKey[] = "dispatcher-remote-test-key-0123";

std::string SharedUrl(int db) {
  const std::string address = shapeshift::testing::SharedRedisAddress();
  std::string host;
  int port = 0;
  if (address.empty() || !shapeshift::testing::SplitAddress(address, &host, &port)) return "";
  RedisClient(host, port, db).Command({"FLUSHDB"});
  return "redis://" + address + "/" + std::to_string(db);
}

std::unique_ptr<Dispatcher> Make(const std::string& url, std::ostream* warnings) {
  testing::BuiltModel model = testing::MiniEncoder(/*max_seq=*/64);
  DispatcherOptions options;
  options.policy = SpecializationPolicy::kStatic;
  options.cache_warnings = warnings;
  options.remote_cache.url = url;
  options.remote_cache.signing_key = kKey;
  options.remote_cache.warnings = warnings;
  options.remote_cache.retry_after_ms = 200;
  absl::StatusOr<std::unique_ptr<Dispatcher>> d =
      Dispatcher::Create(std::move(model.graph), std::move(model.env), options);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *std::move(d) : nullptr;
}

absl::StatusOr<std::vector<Tensor>> Serve(Dispatcher& d, int64_t seq) {
  std::vector<Tensor> in = testing::TokenInputs(1, seq, 50, static_cast<uint32_t>(seq));
  std::vector<TensorView> views;
  for (const Tensor& t : in) views.push_back(TensorView::Of(t));
  ExecutionContext ctx;
  return d.Run(views, ctx);
}

TEST(RedisDispatcherTest, ASecondDispatcherLoadsEveryEntryWithoutCompiling) {
  const std::string url = SharedUrl(6);
  ASSERT_FALSE(url.empty());
  std::ostringstream warnings;
  std::vector<std::vector<Tensor>> first_outputs;
  {
    std::unique_ptr<Dispatcher> first = Make(url, &warnings);
    ASSERT_NE(first, nullptr);
    for (int64_t seq : {5, 9}) first_outputs.push_back(Serve(*first, seq).value());
    EXPECT_EQ(first->stats().compiles, 2);
    EXPECT_GT(first->stats().llvm_compiles, 0);
  }
  std::unique_ptr<Dispatcher> second = Make(url, &warnings);
  ASSERT_NE(second, nullptr);
  const DispatcherStats s = second->stats();
  EXPECT_EQ(s.compiles, 0);
  EXPECT_EQ(s.llvm_compiles, 0);
  EXPECT_EQ(s.remote_loads, 2);
  EXPECT_EQ(s.cache_loads, 2);
  int i = 0;
  for (int64_t seq : {5, 9}) {
    std::vector<Tensor> out = Serve(*second, seq).value();
    EXPECT_EQ(testing::MaxAbsDiff(out[0], first_outputs[i++][0]), 0.0) << "seq=" << seq;
  }
  EXPECT_EQ(second->stats().compiles, 0);
  EXPECT_TRUE(warnings.str().empty()) << warnings.str();
}

TEST(RedisDispatcherTest, FourDispatchersMissingTheSameShapesCompileEachOnce) {
  const std::string url = SharedUrl(7);
  ASSERT_FALSE(url.empty());
  std::ostringstream warnings;
  std::vector<std::unique_ptr<Dispatcher>> replicas;
  for (int r = 0; r < 4; ++r) replicas.push_back(Make(url, &warnings));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (auto& d : replicas) {
    ASSERT_NE(d, nullptr);
    threads.emplace_back([&d, &failures] {
      for (int64_t seq : {5, 9, 17}) failures += Serve(*d, seq).ok() ? 0 : 1;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  int64_t compiles = 0, remote_loads = 0;
  for (auto& d : replicas) {
    compiles += d->stats().compiles;
    remote_loads += d->stats().remote_loads;
    EXPECT_EQ(d->cache().size(), 3u);
  }
  EXPECT_EQ(compiles, 3) << "one compile per distinct entry between the four";
  EXPECT_EQ(remote_loads, 9);
}

TEST(RedisDispatcherTest, APoisonedRecordIsRefusedAndRebuilt) {
  const std::string url = SharedUrl(8);
  ASSERT_FALSE(url.empty());
  std::ostringstream warnings;
  { ASSERT_TRUE(Serve(*Make(url, &warnings), 5).ok()); }
  std::string host;
  int port = 0;
  ASSERT_TRUE(shapeshift::testing::SplitAddress(shapeshift::testing::SharedRedisAddress(), &host, &port));
  RedisClient raw(host, port, 8);
  const std::vector<std::string> hashes = raw.Keys("shapeshift:entries:*");
  ASSERT_EQ(hashes.size(), 1u);
  std::string value = raw.Command({"HGET", hashes[0], "static:1,5"});
  ASSERT_GT(value.size(), 40u);
  value[20] ^= 0x01;  // inside the MAC
  raw.Command({"HSET", hashes[0], "static:1,5", value});

  std::unique_ptr<Dispatcher> second = Make(url, &warnings);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->stats().cache_loads, 0) << "the poisoned record was loaded";
  EXPECT_GE(second->Metrics().remote_refused, 1);
  ASSERT_TRUE(Serve(*second, 5).ok());
  EXPECT_EQ(second->stats().compiles, 1) << "rebuilt";
  EXPECT_NE(warnings.str().find("bad signature"), std::string::npos) << warnings.str();

  std::unique_ptr<Dispatcher> third = Make(url, &warnings);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(third->stats().remote_loads, 1) << "the rebuilt record replaced the poisoned one";
  EXPECT_EQ(third->Metrics().remote_refused, 0);
}

TEST(RedisDispatcherTest, KillingTheServerMidTraceLosesNoRequest) {
  OwnRedisServer server;
  std::ostringstream warnings;
  std::unique_ptr<Dispatcher> d = Make(server.url(), &warnings);
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(Serve(*d, 5).ok());
  ASSERT_TRUE(Serve(*d, 9).ok());
  EXPECT_GT(d->Metrics().remote_bytes_written, 0);
  server.Kill();
  for (int64_t seq : {17, 33, 5, 9, 40}) {
    absl::StatusOr<std::vector<Tensor>> out = Serve(*d, seq);
    EXPECT_TRUE(out.ok()) << "seq=" << seq << ": " << out.status();
  }
  EXPECT_EQ(d->stats().compiles, 5) << "the new shapes compiled locally";
  EXPECT_GE(d->Metrics().remote_errors, 1);
  EXPECT_NE(warnings.str().find("compiling locally"), std::string::npos) << warnings.str();
}

}  // namespace
}  // namespace shapeshift::runtime
