// ArtifactCache: something that is not a regular file where an entry (or a
// namespace directory) belongs — a FIFO, a directory, a symbolic link, a
// socket — is never read or waited on: it is moved aside once, reported
// naming the file, answered as a miss, and the entry is rebuilt by the next
// Put, after which nothing is reported again.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/persist/artifact_cache.h"

namespace shapeshift::runtime::persist {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// Squatters by kind: each makes `path` something other than a regular file.
void MakeFifo(const std::string& path) { ASSERT_EQ(mkfifo(path.c_str(), 0644), 0) << std::strerror(errno); }

void MakeDirectory(const std::string& path) {
  fs::create_directory(path);
  std::ofstream(path + "/inside") << "x";  // not empty: rename over it fails
}

void MakeSocket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(address.sun_path)) << path;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << std::strerror(errno);
  close(fd);  // the socket file stays
}

struct Squatter {
  const char* kind;  // as the warning names it
  std::function<void(const std::string&)> make;
};

class ArtifactCacheSquatterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Short: a socket path must fit sockaddr_un (108 bytes).
    dir_ = absl::StrCat("/tmp/ss_squat_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->line());
    fs::remove_all(dir_);
    ArtifactCacheOptions options;
    options.warnings = &warnings_;
    cache_ = ArtifactCache::Open(dir_, options).value();
    // A valid entry elsewhere, for a symbolic link to point at.
    elsewhere_ = ArtifactCache::Open(dir_ + "_elsewhere", ArtifactCacheOptions{.warnings = nullptr}).value();
    ASSERT_TRUE(elsewhere_->Put("objects", "k1", "bytes from elsewhere").ok());
  }
  void TearDown() override {
    fs::remove_all(dir_);
    fs::remove_all(dir_ + "_elsewhere");
  }

  std::vector<Squatter> Squatters() {
    return {{"a FIFO", MakeFifo},
            {"a directory", MakeDirectory},
            {"a symbolic link",
             [this](const std::string& path) { fs::create_symlink(elsewhere_->PathOf("objects", "k1"), path); }},
            {"a symbolic link", [](const std::string& path) { fs::create_symlink("/nonexistent/target", path); }},
            {"a socket", MakeSocket}};
  }

  // Get with a deadline: a FIFO opened for reading without O_NONBLOCK
  // waits for a writer forever. On timeout the FIFO gets a writer (so the
  // reader thread can finish) and the test fails.
  absl::StatusOr<std::optional<std::string>> GetWithin(const std::string& ns, const std::string& key,
                                                       const std::string& path) {
    auto got = std::async(std::launch::async, [&] { return cache_->Get(ns, key); });
    if (got.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      ADD_FAILURE() << "Get(" << ns << ", " << key << ") blocked on " << path;
      int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) close(fd);
    }
    return got.get();
  }

  // Names in `ns_dir` that are quarantined copies of `name`.
  static std::vector<std::string> Quarantined(const std::string& ns_dir, const std::string& name) {
    std::vector<std::string> out;
    std::error_code error;
    for (const fs::directory_entry& e : fs::directory_iterator(ns_dir, error)) {
      std::string file = e.path().filename().string();
      if (file.rfind("." + name + ".quarantined.", 0) == 0) out.push_back(file);
    }
    return out;
  }

  std::string dir_;
  std::ostringstream warnings_;
  std::unique_ptr<ArtifactCache> cache_;
  std::unique_ptr<ArtifactCache> elsewhere_;
};

TEST_F(ArtifactCacheSquatterTest, AnEntrySquatterIsMovedAsideOnceAndTheEntryRebuilt) {
  const std::string payload = "compiled object bytes";
  fs::create_directories(dir_ + "/objects");
  const std::string path = cache_->PathOf("objects", "k1");
  for (const Squatter& squatter : Squatters()) {
    SCOPED_TRACE(squatter.kind);
    fs::remove_all(path);
    for (const std::string& q : Quarantined(dir_ + "/objects", "k1")) fs::remove_all(dir_ + "/objects/" + q);
    squatter.make(path);
    warnings_.str("");
    const int64_t rejected = cache_->stats().rejected;

    absl::StatusOr<std::optional<std::string>> got = GetWithin("objects", "k1", path);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_FALSE(got->has_value()) << "a squatter was read as the entry: " << **got;
    EXPECT_EQ(cache_->stats().rejected, rejected + 1);
    EXPECT_THAT(warnings_.str(), HasSubstr(path));
    EXPECT_THAT(warnings_.str(), HasSubstr(squatter.kind));
    EXPECT_THAT(warnings_.str(), HasSubstr("moved aside"));
    struct stat info {};
    EXPECT_NE(lstat(path.c_str(), &info), 0) << "the squatter is still in place";
    EXPECT_EQ(Quarantined(dir_ + "/objects", "k1").size(), 1u);

    ASSERT_TRUE(cache_->Put("objects", "k1", payload).ok());
    warnings_.str("");
    got = cache_->Get("objects", "k1");
    ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
    EXPECT_EQ(**got, payload);
    EXPECT_EQ(warnings_.str(), "") << "reported again after the rebuild";
  }
}

// A directory (or anything) in the entry's place must not make every Put
// fail: Put moves it aside too, even when no Get came first.
TEST_F(ArtifactCacheSquatterTest, PutOverASquatterDirectoryMovesItAside) {
  fs::create_directories(dir_ + "/manifests");
  const std::string path = cache_->PathOf("manifests", "m0123");
  MakeDirectory(path);
  ASSERT_TRUE(cache_->Put("manifests", "m0123", "manifest text").ok()) << cache_->stats().last_problem;
  EXPECT_THAT(warnings_.str(), HasSubstr(path));
  EXPECT_THAT(warnings_.str(), HasSubstr("a directory"));
  absl::StatusOr<std::optional<std::string>> got = cache_->Get("manifests", "m0123");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  EXPECT_EQ(**got, "manifest text");
}

TEST_F(ArtifactCacheSquatterTest, ANamespaceSquatterIsMovedAsideOnceAndTheNamespaceRebuilt) {
  const std::string ns_dir = dir_ + "/objects";
  for (const Squatter& squatter : {Squatter{"a FIFO", MakeFifo}, Squatter{"a regular file", nullptr}}) {
    SCOPED_TRACE(squatter.kind);
    fs::remove_all(ns_dir);
    for (const std::string& q : Quarantined(dir_, "objects")) fs::remove_all(dir_ + "/" + q);
    if (squatter.make) {
      squatter.make(ns_dir);
    } else {
      std::ofstream(ns_dir) << "a plain file where the namespace directory belongs";
    }
    warnings_.str("");
    absl::StatusOr<std::optional<std::string>> got = GetWithin("objects", "k1", ns_dir);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_FALSE(got->has_value());
    EXPECT_THAT(warnings_.str(), HasSubstr(ns_dir));
    EXPECT_THAT(warnings_.str(), HasSubstr("moved aside"));
    EXPECT_EQ(Quarantined(dir_, "objects").size(), 1u);
    ASSERT_TRUE(cache_->Put("objects", "k1", "payload").ok()) << cache_->stats().last_problem;
    EXPECT_TRUE(fs::is_directory(fs::symlink_status(ns_dir)));
    got = cache_->Get("objects", "k1");
    ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  }
}

// Put alone (no Get first) also clears a namespace squatter.
TEST_F(ArtifactCacheSquatterTest, PutMovesANamespaceSquatterAside) {
  const std::string ns_dir = dir_ + "/manifests";
  std::ofstream(ns_dir) << "not a directory";
  ASSERT_TRUE(cache_->Put("manifests", "m1", "text").ok()) << cache_->stats().last_problem;
  EXPECT_THAT(warnings_.str(), HasSubstr(ns_dir));
  EXPECT_EQ(cache_->Get("manifests", "m1").value().value_or(""), "text");
}

}  // namespace
}  // namespace shapeshift::runtime::persist
