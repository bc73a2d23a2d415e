// TieredEntryStore: lookups fall through the layers in order, a hit further
// down is copied into the writable layers above it, read-only layers are
// never written, and a layer's error does not hide another layer's entry.
#include "runtime/persist/entry_store.h"

#include <filesystem>
#include <sstream>

#include "gtest/gtest.h"
#include "runtime/persist/artifact_cache.h"

namespace shapeshift::runtime::persist {
namespace {

// A layer that fails every call, like a remote cache that is down.
class BrokenStore : public EntryStore {
 public:
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view, absl::string_view) override {
    ++gets;
    return absl::UnavailableError("down");
  }
  absl::Status Put(absl::string_view, absl::string_view, absl::string_view) override {
    return absl::UnavailableError("down");
  }
  std::string Describe(absl::string_view, absl::string_view) const override { return "broken"; }
  int gets = 0;
};

TEST(EntryStoreTest, AHitInALowerLayerFillsTheWritableLayersAbove) {
  MemoryEntryStore bundle("bundle", /*read_only=*/true);
  MemoryEntryStore local("local");
  MemoryEntryStore remote("remote");
  remote.Insert("objects", "k1", "bytes-1");
  TieredEntryStore tiers({{&bundle, false}, {&local, true}, {&remote, true}});
  absl::StatusOr<std::optional<std::string>> got = tiers.Get("objects", "k1");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, "bytes-1");
  EXPECT_EQ(*local.Get("objects", "k1").value(), "bytes-1") << "backfilled into the local layer";
  EXPECT_FALSE(bundle.Get("objects", "k1").value().has_value()) << "the read-only layer is never written";
}

TEST(EntryStoreTest, PutGoesToEveryWritableLayerAndMissesAreMisses) {
  MemoryEntryStore bundle("bundle", /*read_only=*/true);
  MemoryEntryStore local("local");
  MemoryEntryStore remote("remote");
  TieredEntryStore tiers({{&bundle, false}, {&local, true}, {&remote, true}});
  ASSERT_TRUE(tiers.Put("manifests", "m1", "text").ok());
  EXPECT_TRUE(local.Get("manifests", "m1").value().has_value());
  EXPECT_TRUE(remote.Get("manifests", "m1").value().has_value());
  EXPECT_FALSE(bundle.Get("manifests", "m1").value().has_value());
  EXPECT_FALSE(tiers.Get("manifests", "absent").value().has_value());
  EXPECT_FALSE(bundle.Put("objects", "x", "y").ok()) << "a read-only store refuses writes";
}

TEST(EntryStoreTest, ABrokenLayerDoesNotHideTheNextOne) {
  BrokenStore broken;
  MemoryEntryStore local("local");
  local.Insert("objects", "k", "v");
  TieredEntryStore tiers({{&broken, true}, {&local, true}});
  absl::StatusOr<std::optional<std::string>> got = tiers.Get("objects", "k");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, "v");
  EXPECT_EQ(broken.gets, 1);
  EXPECT_TRUE(tiers.Put("objects", "k2", "v2").ok()) << "kept by the layer that works";
}

TEST(EntryStoreTest, TheLocalCacheDirectoryIsALayer) {
  const std::string dir = ::testing::TempDir() + "/entry_store_test_dir";
  std::filesystem::remove_all(dir);
  std::ostringstream warnings;
  ArtifactCacheOptions options;
  options.warnings = &warnings;
  std::unique_ptr<ArtifactCache> disk = ArtifactCache::Open(dir, options).value();
  MemoryEntryStore remote("remote");
  remote.Insert("objects", "abc", "object-bytes");
  TieredEntryStore tiers({{disk.get(), true}, {&remote, true}});
  ASSERT_TRUE(tiers.Get("objects", "abc").value().has_value());
  EXPECT_TRUE(std::filesystem::exists(disk->PathOf("objects", "abc"))) << "a remote hit lands on disk";
  EXPECT_EQ(tiers.Describe("objects", "abc"), disk->PathOf("objects", "abc") + " | remote:objects/abc");
}

}  // namespace
}  // namespace shapeshift::runtime::persist
