// ArtifactCache: round trips, damaged files reported and never loaded,
// hostile lengths, atomic replacement under concurrency.
#include "runtime/persist/artifact_cache.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/persist/artifact_file.h"

namespace shapeshift::runtime::persist {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

class ArtifactCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/shapeshift_artifact_cache_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_", getpid());
    std::filesystem::remove_all(dir_);
    ArtifactCacheOptions options;
    options.warnings = &warnings_;
    auto cache = ArtifactCache::Open(dir_, options);
    ASSERT_TRUE(cache.ok()) << cache.status();
    cache_ = *std::move(cache);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Puts an entry, damages its file with `damage`, and checks the damage
  // is reported (naming the file and `reason`), not loaded, deleted, and
  // rebuilt by the next Put.
  void ExpectRejectedAndRebuilt(const std::function<void(std::string*)>& damage, const std::string& reason) {
    const std::string payload = "compiled object bytes \x01\x02\x03";
    ASSERT_TRUE(cache_->Put("objects", "k1", payload).ok());
    std::string path = cache_->PathOf("objects", "k1");
    std::string bytes = ReadFile(path);
    damage(&bytes);
    WriteFile(path, bytes);
    int64_t rejected_before = cache_->stats().rejected;

    absl::StatusOr<std::optional<std::string>> got = cache_->Get("objects", "k1");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_FALSE(got->has_value()) << "a damaged entry was loaded (" << reason << ")";
    EXPECT_EQ(cache_->stats().rejected, rejected_before + 1);
    EXPECT_THAT(cache_->stats().last_problem, HasSubstr(path));
    EXPECT_THAT(cache_->stats().last_problem, HasSubstr(reason));
    EXPECT_THAT(warnings_.str(), HasSubstr(path));
    EXPECT_FALSE(std::filesystem::exists(path)) << "damaged file was not deleted";

    ASSERT_TRUE(cache_->Put("objects", "k1", payload).ok());
    got = cache_->Get("objects", "k1");
    ASSERT_TRUE(got.ok() && got->has_value());
    EXPECT_EQ(**got, payload);
  }

  std::string dir_;
  std::ostringstream warnings_;
  std::unique_ptr<ArtifactCache> cache_;
};

TEST_F(ArtifactCacheTest, RoundTripsAndMisses) {
  std::string payload(100000, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(cache_->Put("objects", "abc123", payload).ok());
  absl::StatusOr<std::optional<std::string>> got = cache_->Get("objects", "abc123");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, payload);
  absl::StatusOr<std::optional<std::string>> missing = cache_->Get("objects", "other");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  absl::StatusOr<std::optional<std::string>> other_ns = cache_->Get("manifests", "abc123");
  ASSERT_TRUE(other_ns.ok());
  EXPECT_FALSE(other_ns->has_value());
  ArtifactCacheStats stats = cache_->stats();
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 2);
  EXPECT_EQ(stats.writes, 1);
  EXPECT_EQ(stats.rejected, 0);
  EXPECT_TRUE(warnings_.str().empty()) << warnings_.str();
}

TEST_F(ArtifactCacheTest, PutReplacesAndSurvivesReopening) {
  ASSERT_TRUE(cache_->Put("objects", "k", "first").ok());
  ASSERT_TRUE(cache_->Put("objects", "k", "second").ok());
  auto reopened = ArtifactCache::Open(dir_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->Get("objects", "k").value(), std::optional<std::string>("second"));
  // No temporary files left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_ + "/objects")) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "k");
  }
  EXPECT_EQ(files, 1);
}

TEST_F(ArtifactCacheTest, FlippedPayloadByteIsRejected) {
  ExpectRejectedAndRebuilt([](std::string* b) { (*b)[b->size() - 3] ^= 0x10; }, "checksum mismatch");
}

TEST_F(ArtifactCacheTest, TruncatedFileIsRejected) {
  ExpectRejectedAndRebuilt([](std::string* b) { b->resize(b->size() - 5); }, "do not match the file");
}

TEST_F(ArtifactCacheTest, FileShorterThanTheHeaderIsRejected) {
  ExpectRejectedAndRebuilt([](std::string* b) { b->resize(10); }, "truncated");
}

TEST_F(ArtifactCacheTest, EmptyFileIsRejected) {
  ExpectRejectedAndRebuilt([](std::string* b) { b->clear(); }, "truncated");
}

TEST_F(ArtifactCacheTest, WrongMagicIsRejected) {
  ExpectRejectedAndRebuilt([](std::string* b) { (*b)[0] = 'X'; }, "wrong magic");
}

TEST_F(ArtifactCacheTest, WrongFormatVersionIsRejected) {
  ExpectRejectedAndRebuilt([](std::string* b) { (*b)[8] = static_cast<char>(kArtifactFormatVersion + 1); },
                           "format version 2");
}

TEST_F(ArtifactCacheTest, EntryFiledUnderAnotherKeyIsRejected) {
  ExpectRejectedAndRebuilt([](std::string* b) { *b = EncodeArtifactFile("k2", "other payload"); }, "key 'k2'");
}

// A length field claiming ~2^63 bytes must be refused from the header alone:
// reading it would need an impossible allocation, so passing proves none was made.
TEST_F(ArtifactCacheTest, EnormousLengthFieldIsRejectedWithoutAllocating) {
  ExpectRejectedAndRebuilt([](std::string* b) { (*b)[23] = 0x7f; }, "exceeds the limit");
}

TEST_F(ArtifactCacheTest, LengthWithinLimitButBeyondTheFileIsRejected) {
  ExpectRejectedAndRebuilt([](std::string* b) { (*b)[18] = 0x10; }, "do not match the file");
}

// Exhaustive over a small entry: no single flipped byte and no truncation
// anywhere in the file is ever loaded.
TEST_F(ArtifactCacheTest, EverySingleByteFlipAndTruncationIsRejected) {
  const std::string payload = "tiny payload";
  const std::string good = EncodeArtifactFile("k", payload);
  const std::string path = cache_->PathOf("objects", "k");
  std::vector<std::string> damaged;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string flipped = good;
    flipped[i] ^= 0x01;
    damaged.push_back(flipped);
    damaged.push_back(good.substr(0, i));
  }
  ASSERT_TRUE(cache_->Put("objects", "k", payload).ok());  // creates the namespace directory
  for (size_t i = 0; i < damaged.size(); ++i) {
    WriteFile(path, damaged[i]);
    absl::StatusOr<std::optional<std::string>> got = cache_->Get("objects", "k");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_FALSE(got->has_value()) << "damaged variant " << i << " was loaded";
  }
  EXPECT_EQ(cache_->stats().rejected, static_cast<int64_t>(damaged.size()));
  EXPECT_EQ(cache_->stats().hits, 0);
}

TEST_F(ArtifactCacheTest, OversizedPutIsRefused) {
  ArtifactCacheOptions options;
  options.max_payload_bytes = 8;
  options.warnings = nullptr;
  auto small = ArtifactCache::Open(dir_, options);
  ASSERT_TRUE(small.ok());
  absl::Status s = (*small)->Put("objects", "big", "nine bytes");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("exceeds the limit of 8"));
  EXPECT_FALSE(std::filesystem::exists((*small)->PathOf("objects", "big")));
}

TEST_F(ArtifactCacheTest, NamesThatAreNotPlainFileNamesAreErrors) {
  for (const char* bad : {"", "../escape", "a/b", ".hidden", "sp ace"}) {
    EXPECT_EQ(cache_->Put("objects", bad, "x").code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(cache_->Get(bad, "key").status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/../escape"));
}

TEST_F(ArtifactCacheTest, OpenFailsOnAFile) {
  std::string file = dir_ + "/plain_file";
  WriteFile(file, "x");
  auto opened = ArtifactCache::Open(file);
  ASSERT_FALSE(opened.ok());
  EXPECT_THAT(std::string(opened.status().message()), HasSubstr(file));
}

// Four threads write and read the same keys: every read is a miss or one
// complete value that some thread wrote; nothing is ever rejected.
TEST_F(ArtifactCacheTest, ConcurrentPutAndGetSeeWholeEntriesOnly) {
  auto value = [](int thread, int round, int key) {
    return std::string(1000 + 37 * key, static_cast<char>('a' + thread)) + absl::StrCat(thread, ":", round);
  };
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        for (int key = 0; key < 3; ++key) {
          std::string name = absl::StrCat("key", key);
          if (!cache_->Put("objects", name, value(t, round, key)).ok()) ++bad[t];
          absl::StatusOr<std::optional<std::string>> got = cache_->Get("objects", name);
          if (!got.ok() || !got->has_value()) {
            ++bad[t];
            continue;
          }
          const std::string& v = **got;
          bool whole = false;
          for (int w = 0; w < 4 && !whole; ++w) {
            for (int r = 0; r < 50 && !whole; ++r) whole = v == value(w, r, key);
          }
          if (!whole) ++bad[t];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
  EXPECT_EQ(cache_->stats().rejected, 0);
  EXPECT_EQ(cache_->stats().writes, 4 * 50 * 3);
}

TEST(DefaultCacheDirTest, FollowsXdgCacheHomeThenHome) {
  const char* saved_xdg = std::getenv("XDG_CACHE_HOME");
  const char* saved_home = std::getenv("HOME");
  std::string xdg = saved_xdg ? saved_xdg : "", home = saved_home ? saved_home : "";

  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(DefaultCacheDir().value_or(""), "/tmp/xdg/shapeshift");
  setenv("XDG_CACHE_HOME", "relative/ignored", 1);
  EXPECT_EQ(DefaultCacheDir().value_or(""), "/home/someone/.cache/shapeshift");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(DefaultCacheDir().value_or(""), "/home/someone/.cache/shapeshift");
  unsetenv("HOME");
  EXPECT_EQ(DefaultCacheDir().status().code(), absl::StatusCode::kFailedPrecondition);

  if (saved_xdg) setenv("XDG_CACHE_HOME", xdg.c_str(), 1);
  if (saved_home) setenv("HOME", home.c_str(), 1);
}

}  // namespace
}  // namespace shapeshift::runtime::persist
