// The op table's own invariants: every row is complete (shape rule,
// reference kernel, arity), kPattern rows say which forms compile, and the
// classes the passes rely on hold for the ops they were written for.
#include "graph/op_table.h"

#include <algorithm>
#include <set>

#include "gtest/gtest.h"

namespace shapeshift {
namespace {

TEST(OpTableTest, EveryRowIsComplete) {
  ASSERT_FALSE(AllOps().empty());
  std::set<std::string> seen;
  for (const OpInfo* op : AllOps()) {
    SCOPED_TRACE(op->op_type);
    EXPECT_TRUE(seen.insert(op->op_type).second) << "duplicate row";
    EXPECT_NE(op->infer, nullptr);
    EXPECT_NE(op->reference, nullptr) << "no reference kernel: the interpreter could not run it";
    EXPECT_LE(op->min_inputs, op->max_inputs);
    EXPECT_LE(op->min_outputs, op->max_outputs);
    EXPECT_GE(op->min_outputs, 1);
    EXPECT_EQ(op->cpu == Lowering::kPattern, std::string(op->pattern).size() > 0)
        << "a kPattern row names its compiled forms, and only those rows do";
    EXPECT_EQ(op->cpu == Lowering::kCompileTime, op->op_class == OpClass::kShapeValue);
    EXPECT_EQ(FindOp(op->op_type), op);
  }
  EXPECT_TRUE(std::is_sorted(AllOps().begin(), AllOps().end(),
                             [](const OpInfo* a, const OpInfo* b) { return a->op_type < b->op_type; }));
}

// The CUDA column follows the CPU's (a device program runs the steps the
// CPU path lowers): a pattern or a compile-time value is one on both, and
// CUDA compiles nothing the CPU does not.
TEST(OpTableTest, TheCudaColumnFollowsTheCpuColumn) {
  int cuda_compiled = 0;
  for (const OpInfo* op : AllOps()) {
    SCOPED_TRACE(op->op_type);
    if (op->cuda == Lowering::kCompiled) {
      EXPECT_EQ(op->cpu, Lowering::kCompiled);
      ++cuda_compiled;
    }
    EXPECT_EQ(op->cuda == Lowering::kPattern, op->cpu == Lowering::kPattern);
    EXPECT_EQ(op->cuda == Lowering::kCompileTime, op->cpu == Lowering::kCompileTime);
  }
  EXPECT_GT(cuda_compiled, 0) << "the device program compiles the CPU path's kernels";
  EXPECT_EQ(FindOp("MatMul")->cuda, Lowering::kCompiled);
  EXPECT_EQ(FindOp("LayerNormalization")->cuda, Lowering::kCompiled);
  EXPECT_EQ(FindOp("Tan")->cuda, Lowering::kNone) << "no CPU lowering, so none on the device either";
  EXPECT_EQ(FindOp("ScatterND")->cpu, Lowering::kCompiled);
  EXPECT_EQ(FindOp("ScatterND")->cuda, Lowering::kCompiled) << "its scatter keeps the tuples' order on one thread";
  // No op is CPU-only today: the CUDA column is the CPU column.
  for (const OpInfo* op : AllOps()) EXPECT_EQ(op->cuda, op->cpu) << op->op_type;
}

TEST(OpTableTest, UnknownOpsAreAbsent) {
  EXPECT_EQ(FindOp("Conv"), nullptr);
  EXPECT_EQ(FindOp("If"), nullptr);
  EXPECT_EQ(FindOp(""), nullptr);
  EXPECT_EQ(FindOp("add"), nullptr) << "op types are case-sensitive, as in ONNX";
}

TEST(OpTableTest, ClassesAndShapeOperandsTheFusionRulesRelyOn) {
  for (const char* op : {"Add", "Mul", "Where", "Cast", "Clip", "Expand", "Range", "ConstantOfShape", "Gelu"}) {
    EXPECT_EQ(FindOp(op)->op_class, OpClass::kElementwise) << op;
  }
  for (const char* op : {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"}) {
    EXPECT_EQ(FindOp(op)->op_class, OpClass::kView) << op;
  }
  EXPECT_EQ(FindOp("MatMul")->op_class, OpClass::kMatmul);
  EXPECT_EQ(FindOp("Gemm")->op_class, OpClass::kMatmul);
  EXPECT_TRUE(FindOp("Reshape")->IsShapeOperand(1));
  EXPECT_FALSE(FindOp("Reshape")->IsShapeOperand(0));
  for (int i : {1, 2, 3, 4}) EXPECT_TRUE(FindOp("Slice")->IsShapeOperand(i)) << i;
  EXPECT_FALSE(FindOp("Slice")->IsShapeOperand(0));
  for (int i : {0, 1, 2}) EXPECT_TRUE(FindOp("Range")->IsShapeOperand(i)) << i;
  EXPECT_TRUE(FindOp("ReduceSum")->IsShapeOperand(1));
  EXPECT_TRUE(FindOp("ConstantOfShape")->IsShapeOperand(0));
  EXPECT_FALSE(FindOp("Clip")->IsShapeOperand(1)) << "Clip's min/max are data";
  EXPECT_FALSE(FindOp("Add")->IsShapeOperand(-1));
  EXPECT_FALSE(FindOp("Add")->IsShapeOperand(40));
}

TEST(OpTableTest, NamesOfClassesAndLowerings) {
  EXPECT_STREQ(OpClassName(OpClass::kElementwise), "elementwise");
  EXPECT_STREQ(LoweringName(Lowering::kPattern), "pattern");
  EXPECT_STREQ(LoweringName(Lowering::kNone), "none");
}

}  // namespace
}  // namespace shapeshift
