#include "codegen/kernel_mutator.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace shapeshift::codegen {

Value ValueMutator::Mutate(const Value& root) {
  if (!root) return root;
  // Bottom up over the distinct nodes (PostOrder): every operand is
  // rewritten before its readers, once, whatever number of readers it has.
  absl::flat_hash_map<const ValueNode*, Value> rewritten;
  std::vector<const Value*> order = PostOrder(root);
  rewritten.reserve(order.size());
  for (const Value* node : order) {
    const ValueNode& v = **node;
    std::vector<Value> operands;
    bool changed = false;
    for (const Value& o : v.operands) {
      operands.push_back(o ? rewritten.at(o.get()) : o);
      changed |= operands.back() != o;
    }
    Value self = *node;
    if (changed) {
      ValueNode copy = v;
      copy.operands = std::move(operands);
      self = std::make_shared<const ValueNode>(std::move(copy));
    }
    rewritten[&v] = Visit(*self, self);
  }
  return rewritten.at(root.get());
}

Value ValueMutator::WithIndex(const Value& self) {
  SymExpr index = MutateIndex(self->index);
  if (index == self->index) return self;
  ValueNode copy = *self;
  copy.index = index;
  return std::make_shared<const ValueNode>(std::move(copy));
}

std::vector<Stmt> StmtMutator::MutateBlock(const std::vector<Stmt>& body) {
  std::vector<Stmt> out;
  out.reserve(body.size());
  for (const Stmt& s : body) out.push_back(MutateStmt(s));
  return out;
}

Stmt StmtMutator::MutateStmt(const Stmt& s) {
  // Bound by name, so a field added to Stmt does not compile until it is
  // rewritten (or kept) here.
  const auto& [kind, name, begin, end, body, buffer, index, value, at, reduce] = s;
  Stmt r;
  r.kind = kind;
  r.name = name;
  r.begin = MutateIndex(begin);
  r.end = MutateIndex(end);
  r.body = MutateBlock(body);
  r.buffer = buffer;
  r.index = MutateIndex(index);
  r.value = Mutate(value);
  r.at = Mutate(at);
  r.reduce = reduce;
  return Visit(s, std::move(r));
}

Kernel StmtMutator::MutateKernel(const Kernel& kernel) {
  const auto& [name, buffers, dims, parallel_var, parallel_extent, body] = kernel;
  Kernel out;
  out.name = name;
  out.buffers = buffers;
  out.dims = dims;
  out.parallel_var = parallel_var;
  out.parallel_extent = MutateIndex(parallel_extent);
  out.body = MutateBlock(body);
  return out;
}

}  // namespace shapeshift::codegen
