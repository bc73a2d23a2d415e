// The persistent-cache manifest's text: names from the model survive
// encoding (guards' provenance names nodes and values byte for byte).
#include "runtime/specialization/manifest.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "shapes/predicate.h"

namespace shapeshift::runtime {
namespace {

TEST(ManifestTest, ANodeNameThatIsNotUtf8IsEncodedNotThrown) {
  // A bucketed entry whose memory plan asked a question at a value named
  // with bytes that are not UTF-8: encoding used to throw out of the JSON
  // dump while the cache was written.
  auto entry = std::make_shared<CacheEntry>();
  entry->id = 1;
  entry->tier = Tier::kBucketed;
  entry->spec.tier = Tier::kBucketed;
  entry->guards = {{*ParsePredicate("seq <= 32"), {"memory-plan", "t\xff\xfe" "3", "reuse a dead buffer's slot"}}};
  const std::string text = EncodeManifest("m0000000000000001", {entry});
  absl::StatusOr<std::vector<ManifestEntry>> decoded = DecodeManifest(text, "m0000000000000001");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->size(), 1u);
  ASSERT_EQ((*decoded)[0].guards.size(), 1u);
  EXPECT_EQ((*decoded)[0].guards[0].atom, "seq <= 32");
  EXPECT_EQ((*decoded)[0].guards[0].provenance.node, "t\xef\xbf\xbd\xef\xbf\xbd" "3");  // U+FFFD each
}

}  // namespace
}  // namespace shapeshift::runtime
