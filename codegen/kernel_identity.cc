// Structural hash and equality of kernels. Names of the kernel and of its
// buffers are labels for humans and are ignored; everything that changes the
// generated code (types, roles, dims order, loop structure, expressions) is
// compared. SymExprs are interned, so comparing them is a pointer compare.
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "codegen/kernel_ir.h"
#include "codegen/kernel_visitor.h"

namespace shapeshift::codegen {
namespace {

// Both walk the DAG, not the tree (see kernel_ir.h): each distinct node
// is hashed once (FoldDag), each distinct pair of nodes compared once.
// Neither dispatches on the kind: every field of every node is compared,
// whatever its kind, so a new kind needs nothing here.
size_t HashValue(const Value& root) {
  return FoldDag<size_t>(root, 0, [](const ValueNode& v, absl::Span<size_t> operands, int) {
    size_t h = absl::HashOf(v.kind, v.type, v.f_value, v.i_value, v.buffer, v.index, v.name, v.op);
    for (size_t o : operands) h = absl::HashOf(h, o);
    return h;
  });
}

bool EqualNodeFields(const ValueNode& a, const ValueNode& b) {
  return a.kind == b.kind && a.type == b.type && a.f_value == b.f_value && a.i_value == b.i_value &&
         a.buffer == b.buffer && a.index == b.index && a.name == b.name && a.op == b.op &&
         a.operands.size() == b.operands.size();
}

bool EqualValue(const Value& a, const Value& b) {
  absl::flat_hash_set<std::pair<const ValueNode*, const ValueNode*>> compared;
  std::vector<std::pair<const ValueNode*, const ValueNode*>> work = {{a.get(), b.get()}};
  while (!work.empty()) {
    auto [x, y] = work.back();
    work.pop_back();
    if (x == y) continue;
    if (x == nullptr || y == nullptr || !EqualNodeFields(*x, *y)) return false;
    if (!compared.insert({x, y}).second) continue;
    for (size_t i = 0; i < x->operands.size(); ++i) work.push_back({x->operands[i].get(), y->operands[i].get()});
  }
  return true;
}

size_t HashBlock(const std::vector<Stmt>& body) {
  size_t h = body.size();
  for (const Stmt& s : body) {
    h = absl::HashOf(h, s.kind, s.name, s.begin, s.end, s.buffer, s.index, s.reduce,
                     HashValue(s.value), HashValue(s.at), HashBlock(s.body));
  }
  return h;
}

bool EqualBlock(const std::vector<Stmt>& a, const std::vector<Stmt>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const Stmt& x = a[i];
    const Stmt& y = b[i];
    if (x.kind != y.kind || x.name != y.name || x.begin != y.begin || x.end != y.end ||
        x.buffer != y.buffer || x.index != y.index || x.reduce != y.reduce ||
        !EqualValue(x.value, y.value) || !EqualValue(x.at, y.at) || !EqualBlock(x.body, y.body)) {
      return false;
    }
  }
  return true;
}

}  // namespace

size_t StructuralHash(const Kernel& kernel) {
  size_t h = absl::HashOf(kernel.dims, kernel.parallel_var, kernel.parallel_extent);
  for (const BufferParam& b : kernel.buffers) h = absl::HashOf(h, b.dtype, b.role);
  return absl::HashOf(h, HashBlock(kernel.body));
}

bool StructurallyEqual(const Kernel& a, const Kernel& b) {
  if (a.dims != b.dims || a.parallel_var != b.parallel_var ||
      a.parallel_extent != b.parallel_extent || a.buffers.size() != b.buffers.size()) {
    return false;
  }
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    if (a.buffers[i].dtype != b.buffers[i].dtype || a.buffers[i].role != b.buffers[i].role) return false;
  }
  return EqualBlock(a.body, b.body);
}

}  // namespace shapeshift::codegen
