// RemoteCache against a real redis-server: values round-trip signed and with
// a TTL; unsigned, badly signed, truncated and swapped values are refused
// and counted; oversized values are not written; entry records and leases;
// a down, a slow (never answering) and a full server degrade to misses and
// skipped writes with a warning, never an error that fails a request.
#include "runtime/persist/remote_cache.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "tests/fleet/redis_test_util.h"

namespace shapeshift::runtime::persist {
namespace {

using shapeshift::testing::OwnRedisServer;
using shapeshift::testing::RedisClient;

constexpr char kKey[] = "remote-cache-test-key-0123456789";

struct Shared {
  std::string host;
  int port = 0;
  int db = 0;
  std::string url;
};

// The shared server, database `db` emptied first.
Shared SharedDb(int db) {
  Shared s;
  s.db = db;
  const std::string address = shapeshift::testing::SharedRedisAddress();
  if (address.empty() || !shapeshift::testing::SplitAddress(address, &s.host, &s.port)) return s;
  s.url = "redis://" + address + "/" + std::to_string(db);
  RedisClient(s.host, s.port, db).Command({"FLUSHDB"});
  return s;
}

std::unique_ptr<RemoteCache> OpenCache(const std::string& url, std::ostream* warnings,
                                       std::string key = kKey, uint64_t max_entry_bytes = 1 << 20,
                                       int timeout_ms = 1000) {
  RemoteCacheOptions options;
  options.url = url;
  options.signing_key = std::move(key);
  options.warnings = warnings;
  options.max_entry_bytes = max_entry_bytes;
  options.timeout_ms = timeout_ms;
  absl::StatusOr<std::unique_ptr<RemoteCache>> cache = RemoteCache::Open(options);
  EXPECT_TRUE(cache.ok()) << cache.status();
  return cache.ok() ? *std::move(cache) : nullptr;
}

TEST(RedisRemoteCacheTest, ValuesRoundTripSignedWithATtl) {
  Shared s = SharedDb(1);
  ASSERT_FALSE(s.url.empty());
  std::ostringstream warnings;
  std::unique_ptr<RemoteCache> cache = OpenCache(s.url, &warnings);
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(cache->Put("objects", "k1", std::string("machine\0code", 12)).ok());
  absl::StatusOr<std::optional<std::string>> got = cache->Get("objects", "k1");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, std::string("machine\0code", 12));
  EXPECT_FALSE(cache->Get("objects", "absent").value().has_value());
  RedisClient raw(s.host, s.port, s.db);
  EXPECT_EQ(raw.Command({"GET", "shapeshift:objects:k1"}).substr(0, 5), "SSRC1") << "stored signed";
  const int64_t ttl = std::stoll(raw.Command({"PTTL", "shapeshift:objects:k1"}));
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, cache->options().ttl_ms);
  const RemoteCacheStats stats = cache->stats();
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 1);
  EXPECT_EQ(stats.writes, 1);
  EXPECT_EQ(stats.bytes_written, 12);
  EXPECT_EQ(stats.bytes_read, 12);
  EXPECT_TRUE(warnings.str().empty()) << warnings.str();
}

TEST(RedisRemoteCacheTest, UnsignedBadlySignedTruncatedAndSwappedValuesAreRefused) {
  Shared s = SharedDb(2);
  ASSERT_FALSE(s.url.empty());
  std::ostringstream warnings;
  std::unique_ptr<RemoteCache> cache = OpenCache(s.url, &warnings);
  ASSERT_NE(cache, nullptr);
  RedisClient raw(s.host, s.port, s.db);
  ASSERT_TRUE(cache->Put("objects", "good", "payload-of-the-good-entry").ok());
  const std::string good = raw.Command({"GET", "shapeshift:objects:good"});
  // Unsigned: what a client without the key can write.
  raw.Command({"SET", "shapeshift:objects:unsigned", "payload"});
  // Signed with another key.
  raw.Command({"SET", "shapeshift:objects:forged",
               RemoteCache::Sign("an-attackers-own-key-1234", "shapeshift:objects:forged", "evil")});
  // Truncated: a good value cut short.
  raw.Command({"SET", "shapeshift:objects:truncated", good.substr(0, good.size() - 3)});
  // Swapped: a good value stored under another key.
  raw.Command({"SET", "shapeshift:objects:swapped", good});
  for (const char* key : {"unsigned", "forged", "truncated", "swapped"}) {
    absl::StatusOr<std::optional<std::string>> got = cache->Get("objects", key);
    ASSERT_TRUE(got.ok()) << key;
    EXPECT_FALSE(got->has_value()) << key << " was accepted";
  }
  EXPECT_EQ(cache->stats().refused, 4);
  EXPECT_EQ(cache->Rejected(), 4);
  EXPECT_NE(warnings.str().find("shapeshift:objects:swapped: bad signature"), std::string::npos) << warnings.str();
  EXPECT_NE(warnings.str().find("unsigned"), std::string::npos) << warnings.str();
  // The good entry is untouched, and a rebuild (Put) replaces a refused one.
  EXPECT_TRUE(cache->Get("objects", "good").value().has_value());
  ASSERT_TRUE(cache->Put("objects", "swapped", "rebuilt").ok());
  EXPECT_EQ(*cache->Get("objects", "swapped").value(), "rebuilt");
}

TEST(RedisRemoteCacheTest, OversizedValuesAreNotWritten) {
  Shared s = SharedDb(3);
  ASSERT_FALSE(s.url.empty());
  std::ostringstream warnings;
  std::unique_ptr<RemoteCache> cache = OpenCache(s.url, &warnings, kKey, /*max_entry_bytes=*/100);
  ASSERT_NE(cache, nullptr);
  absl::Status put = cache->Put("objects", "big", std::string(101, 'b'));
  EXPECT_TRUE(absl::IsResourceExhausted(put)) << put;
  EXPECT_EQ(RedisClient(s.host, s.port, s.db).Command({"EXISTS", "shapeshift:objects:big"}), "0");
  EXPECT_EQ(cache->stats().too_large, 1);
  EXPECT_NE(warnings.str().find("exceed the entry size limit of 100"), std::string::npos) << warnings.str();
  EXPECT_TRUE(cache->Put("objects", "small", std::string(100, 's')).ok());
}

TEST(RedisRemoteCacheTest, RecordsAndLeases) {
  Shared s = SharedDb(4);
  ASSERT_FALSE(s.url.empty());
  std::ostringstream warnings;
  std::unique_ptr<RemoteCache> a = OpenCache(s.url, &warnings);
  std::unique_ptr<RemoteCache> b = OpenCache(s.url, &warnings);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->PutRecord("m1", "static:5", "entry five").ok());
  ASSERT_TRUE(b->PutRecord("m1", "static:9", "entry nine").ok());
  std::vector<std::pair<std::string, std::string>> records = a->GetRecords("m1");
  std::sort(records.begin(), records.end());
  ASSERT_EQ(records.size(), 2u) << "two writers, no lost update";
  EXPECT_EQ(records[0].second, "entry five");
  EXPECT_EQ(records[1].second, "entry nine");
  // A record copied under another field is refused.
  RedisClient raw(s.host, s.port, s.db);
  raw.Command({"HSET", "shapeshift:entries:m1", "static:17", raw.Command({"HGET", "shapeshift:entries:m1", "static:5"})});
  EXPECT_FALSE(a->GetRecord("m1", "static:17").has_value());
  EXPECT_EQ(a->GetRecords("m1").size(), 2u);
  EXPECT_GE(a->stats().refused, 2);

  EXPECT_EQ(a->TryLease("m1", "static:33"), RemoteCache::Lease::kAcquired);
  EXPECT_EQ(b->TryLease("m1", "static:33"), RemoteCache::Lease::kHeldByAnother);
  b->ReleaseLease("m1", "static:33");  // not b's: stays
  EXPECT_EQ(b->TryLease("m1", "static:33"), RemoteCache::Lease::kHeldByAnother);
  const int64_t pttl = std::stoll(raw.Command({"PTTL", "shapeshift:lease:m1:static:33"}));
  EXPECT_GT(pttl, 0) << "a lease expires if its holder dies";
  a->ReleaseLease("m1", "static:33");
  EXPECT_EQ(b->TryLease("m1", "static:33"), RemoteCache::Lease::kAcquired);
}

TEST(RedisRemoteCacheTest, ALeaseIsRenewedWhileHeldAndExpiresOnceItsHolderStops) {
  Shared s = SharedDb(5);
  ASSERT_FALSE(s.url.empty());
  std::ostringstream warnings;
  RemoteCacheOptions options;
  options.url = s.url;
  options.signing_key = kKey;
  options.warnings = &warnings;
  // Renewed every second; a renewal would have to be 2 s late for the
  // lease to lapse, which even a loaded machine does not do to a thread
  // that sleeps and sends one command.
  options.lease_ms = 3000;
  std::unique_ptr<RemoteCache> holder = RemoteCache::Open(options).value();
  std::unique_ptr<RemoteCache> other = RemoteCache::Open(options).value();
  ASSERT_EQ(holder->TryLease("m", "static:1,5"), RemoteCache::Lease::kAcquired);
  {
    RemoteCache::LeaseKeeper keeper(holder.get(), "m", "static:1,5");
    // Over two lease lifetimes: without renewal it would have expired.
    std::this_thread::sleep_for(std::chrono::milliseconds(7000));
    EXPECT_EQ(other->TryLease("m", "static:1,5"), RemoteCache::Lease::kHeldByAnother);
  }
  // The holder stops renewing (as if it died): the lease expires by itself.
  RemoteCache::Lease taken = RemoteCache::Lease::kHeldByAnother;
  for (int i = 0; i < 300 && taken != RemoteCache::Lease::kAcquired; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    taken = other->TryLease("m", "static:1,5");
  }
  EXPECT_EQ(taken, RemoteCache::Lease::kAcquired) << "the lease never expired";
  EXPECT_FALSE(holder->RenewLease("m", "static:1,5")) << "a lease taken over is not renewed by its old holder";
}

TEST(RedisRemoteCacheTest, ADownServerIsOneWarningAndMisses) {
  std::ostringstream warnings;
  const int port = shapeshift::testing::FreeLoopbackPort();  // nobody listens
  std::unique_ptr<RemoteCache> cache = OpenCache("redis://127.0.0.1:" + std::to_string(port), &warnings);
  ASSERT_NE(cache, nullptr);
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<std::optional<std::string>> got = cache->Get("objects", "k");
    ASSERT_TRUE(got.ok()) << "a down server is a miss, not an error";
    EXPECT_FALSE(got->has_value());
  }
  EXPECT_FALSE(cache->Put("objects", "k", "v").ok());
  EXPECT_EQ(cache->TryLease("m", "f"), RemoteCache::Lease::kUnavailable);
  const RemoteCacheStats stats = cache->stats();
  EXPECT_EQ(stats.errors, 1) << "one connection attempt per retry interval";
  EXPECT_GE(stats.skipped, 6);
  const std::string text = warnings.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("cannot connect"), std::string::npos) << text;
}

TEST(RedisRemoteCacheTest, ASlowServerTimesOutAndIsTreatedAsDown) {
  // A listener that accepts connections (the kernel does) and never answers.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(fd, 16), 0);
  socklen_t n = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  std::ostringstream warnings;
  std::unique_ptr<RemoteCache> cache = OpenCache("redis://127.0.0.1:" + std::to_string(ntohs(a.sin_port)), &warnings,
                                                 kKey, 1 << 20, /*timeout_ms=*/200);
  ASSERT_NE(cache, nullptr);
  absl::StatusOr<std::optional<std::string>> got = cache->Get("objects", "k");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(cache->stats().errors, 1);
  EXPECT_NE(warnings.str().find("GET failed"), std::string::npos) << warnings.str();
  close(fd);
}

TEST(RedisRemoteCacheTest, AFullServerRefusesWritesAndStillServesReads) {
  OwnRedisServer server({"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"});
  std::ostringstream warnings;
  std::unique_ptr<RemoteCache> cache = OpenCache(server.url(), &warnings, kKey, /*max_entry_bytes=*/64 << 20);
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(cache->Put("objects", "small", "fits").ok());
  absl::Status s;
  for (int i = 0; i < 8 && s.ok(); ++i) s = cache->Put("objects", "big" + std::to_string(i), std::string(1 << 20, 'x'));
  EXPECT_FALSE(s.ok()) << "the server never filled up";
  EXPECT_NE(cache->stats().last_problem.find("OOM"), std::string::npos) << cache->stats().last_problem;
  EXPECT_EQ(*cache->Get("objects", "small").value(), "fits") << "a full server still answers reads";
}

}  // namespace
}  // namespace shapeshift::runtime::persist
