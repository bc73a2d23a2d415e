// tools/model_loader.h's input recipes on real exports: token ids are the
// inputs that index an embedding table, found through the shape-only ops an
// exporter puts before the Gather (torch.export reshapes `input_ids`), so
// `run` and `generate` draw them below the table's rows.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tools/model_loader.h"

namespace shapeshift::tools {
namespace {

const InputRecipe* Find(const std::vector<InputRecipe>& recipes, const std::string& name) {
  for (const InputRecipe& r : recipes) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(InputRecipesTest, TokenIdsAreFoundThroughTheExportersReshapes) {
  for (const char* model : {"gpt2-past-dynamo", "gpt2-past-torchscript", "llama-past-dynamo", "bert-base-dynamo"}) {
    SCOPED_TRACE(model);
    absl::StatusOr<ImportedModel> imported =
        LoadModel(absl::StrCat(SHAPESHIFT_SOURCE_DIR, "/tests/data/models/", model, "/model.onnx"), {});
    ASSERT_TRUE(imported.ok()) << imported.status();
    const std::vector<InputRecipe> recipes = InputRecipes(*imported->graph);
    const InputRecipe* ids = Find(recipes, "input_ids");
    ASSERT_NE(ids, nullptr);
    EXPECT_EQ(ids->kind, InputRecipe::Kind::kTokenIds);
    EXPECT_EQ(ids->limit, 1000);  // the tiny configs' vocabulary
    const InputRecipe* mask = Find(recipes, "attention_mask");
    ASSERT_NE(mask, nullptr);
    EXPECT_EQ(mask->kind, InputRecipe::Kind::kMask);
  }
}

}  // namespace
}  // namespace shapeshift::tools
