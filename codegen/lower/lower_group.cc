// Group dispatch, plus the lowerings that produce no kernel: oneDNN matmul
// configurations, embedding lookups and views.
#include "codegen/lower/lower_group.h"

#include "absl/strings/str_cat.h"
#include "codegen/lower/lower_util.h"
#include "graph/dtype.h"

namespace shapeshift::codegen::lower {
namespace {

absl::Status GroupError(const passes::Group& g, absl::string_view why) {
  return lower::GroupError(g, g.nodes.empty() ? nullptr : g.nodes.front(), why);
}

int64_t StaticOrRuntime(SymExpr e) { return e.AsConst().value_or(cpu::kRuntimeDim); }

absl::StatusOr<MatmulCall> LowerMatmul(const passes::Group& g) {
  const passes::MatmulGroup& mm = g.matmul;
  if (mm.a == nullptr || mm.b == nullptr || g.outputs.size() != 1) {
    return GroupError(g, "a matmul group needs operands and exactly one output");
  }
  for (const GraphValue* v : {mm.a, mm.b, mm.bias, mm.residual, g.outputs[0]}) {
    if (v != nullptr && v->type().dtype != DType::kF32) {
      return GroupError(g, absl::StrCat("'", v->name(), "' is ", DTypeName(v->type().dtype), "; matmuls are f32"));
    }
  }
  const std::vector<SymExpr>& a = mm.a->type().shape;
  const std::vector<SymExpr>& b = mm.b->type().shape;
  if (a.size() < 2 || b.size() < 2) return GroupError(g, "matmul operands must have rank >= 2");
  MatmulCall call;
  call.a = mm.a;
  call.b = mm.b;
  call.bias = mm.bias;
  call.residual = mm.residual;
  call.c = g.outputs[0];
  call.k = a.back();
  call.n = mm.transpose_b ? b[b.size() - 2] : b.back();
  if (mm.b_is_2d || a.size() == 2) {
    if (b.size() != 2) return GroupError(g, "b must be 2-D when a's batch dims are flattened");
    call.m = Product(a, 0, a.size() - 1);
    call.batch = 1;
    call.config.batch = 0;
  } else {
    if (b.size() != a.size()) return GroupError(g, "batched matmul operands must have equal rank");
    call.m = a[a.size() - 2];
    call.batch = Product(a, 0, a.size() - 2);
    call.config.batch = StaticOrRuntime(call.batch);
  }
  call.config.m = StaticOrRuntime(call.m);
  call.config.k = StaticOrRuntime(call.k);
  call.config.n = StaticOrRuntime(call.n);
  call.config.transpose_b = mm.transpose_b;
  call.config.bias = mm.bias != nullptr;
  call.config.scale = mm.scale;
  call.config.residual = mm.residual != nullptr;
  switch (mm.activation) {
    case passes::GeluForm::kNone: call.config.activation = cpu::MatmulActivation::kNone; break;
    case passes::GeluForm::kErf: call.config.activation = cpu::MatmulActivation::kGeluErf; break;
    case passes::GeluForm::kTanh: call.config.activation = cpu::MatmulActivation::kGeluTanh; break;
  }
  return call;
}

absl::StatusOr<GatherRowsCall> LowerGather(const passes::Group& g) {
  if (g.nodes.size() != 1 || g.outputs.size() != 1) return GroupError(g, "expects one Gather node");
  const Node* gather = g.nodes[0];
  absl::StatusOr<int64_t> axis = gather->attrs().GetInt("axis", 0);
  if (!axis.ok()) return axis.status();
  GatherRowsCall call;
  call.table = gather->input(0);
  call.indices = gather->input(1);
  call.output = g.outputs[0];
  call.node_name = gather->name();
  const std::vector<SymExpr>& table = call.table->type().shape;
  if (*axis != 0 || table.empty()) return GroupError(g, "only Gather on axis 0 of a table is compiled");
  DType index_type = call.indices->type().dtype;
  if (index_type != DType::kI64 && index_type != DType::kI32) return GroupError(g, "indices must be i64 or i32");
  std::optional<int64_t> rows = table[0].AsConst();
  std::optional<int64_t> row_elements = Product(table, 1, table.size()).AsConst();
  if (!rows || !row_elements) return GroupError(g, "the table must have a static shape");
  call.table_rows = *rows;
  call.row_bytes = *row_elements * static_cast<int64_t>(DTypeSize(call.table->type().dtype));
  call.num_indices = call.indices->type().NumElements();
  return call;
}

template <typename T>
absl::StatusOr<std::vector<LoweredStep>> One(absl::StatusOr<T> step) {
  if (!step.ok()) return step.status();
  std::vector<LoweredStep> steps;
  steps.push_back(*std::move(step));
  return steps;
}

}  // namespace

absl::StatusOr<std::vector<LoweredStep>> LowerGroup(const passes::Group& group, ShapeEnv* env) {
  switch (group.kind) {
    case passes::GroupKind::kMatmul: return One(LowerMatmul(group));
    case passes::GroupKind::kElementwise:
    case passes::GroupKind::kTranspose:
    case passes::GroupKind::kCopy: return One(LowerElementwise(group, env));
    case passes::GroupKind::kSoftmax: return One(LowerSoftmax(group, env));
    case passes::GroupKind::kLayerNorm: return One(LowerLayerNorm(group, env));
    case passes::GroupKind::kRotary: return One(LowerRotary(group, env));
    case passes::GroupKind::kReduction: return One(LowerReduction(group, env));
    case passes::GroupKind::kGather: {
      // An embedding table of static shape: the native row copy. Anything
      // else (a symbolic table) is the general gather kernel.
      absl::StatusOr<GatherRowsCall> rows = LowerGather(group);
      if (rows.ok() || group.nodes.size() != 1) return One(std::move(rows));
      return LowerDataMovement(group, env);
    }
    case passes::GroupKind::kConcat: return LowerConcat(group, env);
    case passes::GroupKind::kSlice: return One(LowerSlice(group, env));
    case passes::GroupKind::kScan: return One(LowerScan(group, env));
    case passes::GroupKind::kAttention: return One(LowerAttention(group));
    case passes::GroupKind::kView: {
      if (group.inputs.size() != 1) return GroupError(group, "a view reads exactly one value");
      std::vector<LoweredStep> steps;
      for (const GraphValue* out : group.outputs) steps.push_back(AliasCall{group.inputs[0], out});
      return steps;
    }
    case passes::GroupKind::kOther:
      // One data-movement node (a gather with the nodes computing its indices before it).
      if (!group.nodes.empty() && IsDataMovementOp(*group.nodes.back())) return LowerDataMovement(group, env);
      break;
  }
  return GroupError(group, "no compiled lowering for this op");
}

}  // namespace shapeshift::codegen::lower
