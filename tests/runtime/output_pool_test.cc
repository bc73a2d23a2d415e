// OutputPool: large output storage is recycled across requests (a decode
// step's growing cache reuses the previous step's blocks), small storage is
// left to malloc, the cache stays within twice the largest request, and
// storage that outlives the pool is simply freed.
#include "runtime/output_pool.h"

#include <cstring>
#include <memory>

#include "gtest/gtest.h"

namespace shapeshift::runtime {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(OutputPoolTest, AReleasedBlockServesTheNextRequestOfASimilarSize) {
  OutputPool pool;
  pool.NoteRequestBytes(16 * kMiB);
  std::byte* first = nullptr;
  {
    std::shared_ptr<std::byte[]> a = pool.Get(12 * kMiB);
    first = a.get();
    std::memset(a.get(), 1, 12 * kMiB);  // the whole requested size is usable
  }
  EXPECT_GE(pool.CachedBytes(), 12 * kMiB);
  // One token more of KV cache: a little larger, same block.
  std::shared_ptr<std::byte[]> b = pool.Get(12 * kMiB + 24 * 1024);
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(pool.CachedBytes(), 0u);
}

TEST(OutputPoolTest, AMuchLargerCachedBlockIsNotHandedToASmallRequest) {
  OutputPool pool;
  pool.NoteRequestBytes(64 * kMiB);
  std::byte* big = nullptr;
  {
    std::shared_ptr<std::byte[]> a = pool.Get(32 * kMiB);
    big = a.get();
  }
  std::shared_ptr<std::byte[]> small = pool.Get(2 * kMiB);
  EXPECT_NE(small.get(), big);
  EXPECT_GE(pool.CachedBytes(), 32 * kMiB);
}

TEST(OutputPoolTest, SmallStorageIsNotPooled) {
  OutputPool pool;
  pool.NoteRequestBytes(8 * kMiB);
  { std::shared_ptr<std::byte[]> a = pool.Get(OutputPool::kMinPooledBytes - 1); }
  EXPECT_EQ(pool.CachedBytes(), 0u);
}

TEST(OutputPoolTest, TheCacheStaysWithinTwiceTheLargestRequest) {
  OutputPool pool;
  pool.NoteRequestBytes(4 * kMiB);
  EXPECT_EQ(pool.CachedLimit(), 8 * kMiB);
  {
    std::shared_ptr<std::byte[]> a = pool.Get(3 * kMiB);
    std::shared_ptr<std::byte[]> b = pool.Get(3 * kMiB);
    std::shared_ptr<std::byte[]> c = pool.Get(3 * kMiB);
  }
  EXPECT_LE(pool.CachedBytes(), pool.CachedLimit());
  EXPECT_GT(pool.CachedBytes(), 0u);
}

TEST(OutputPoolTest, StorageMayOutliveThePool) {
  std::shared_ptr<std::byte[]> kept;
  {
    OutputPool pool;
    pool.NoteRequestBytes(8 * kMiB);
    kept = pool.Get(4 * kMiB);
  }
  std::memset(kept.get(), 7, 4 * kMiB);
  EXPECT_EQ(kept[4 * kMiB - 1], std::byte{7});
  kept.reset();  // freed, not returned to the destroyed pool (ASan checks this)
}

}  // namespace
}  // namespace shapeshift::runtime
