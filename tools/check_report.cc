#include "tools/check_report.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/terminal_text.h"

namespace shapeshift::tools {
namespace {

std::string PoliciesText(const runtime::TierCheck& tier) {
  std::vector<std::string> names;
  for (runtime::SpecializationPolicy p : tier.policies) names.push_back(runtime::SpecializationPolicyName(p));
  return absl::StrJoin(names, ", ");
}

std::string AtText(const runtime::TierCheck& tier, const std::vector<std::string>& slots) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < tier.at.size() && i < slots.size(); ++i) {
    parts.push_back(absl::StrCat(Escaped(slots[i]), "=", tier.at[i]));
  }
  return absl::StrJoin(parts, " ");
}

std::string Where(const runtime::CompileProblem& p) {
  return p.node.empty() ? "model" : absl::StrCat("node '", Escaped(p.node), "' (", Escaped(p.op_type), ")");
}

}  // namespace

std::vector<std::string> RequestSlots(const Graph& graph) {
  std::vector<std::string> slots;
  absl::flat_hash_set<std::string> bound;
  for (const Value* in : graph.inputs()) {
    for (SymExpr dim : in->type().shape) {
      if (dim.IsSymbol() && bound.insert(dim.symbol_name()).second) slots.push_back(dim.symbol_name());
    }
  }
  return slots;
}

void PrintTierCheck(FILE* out, const runtime::TierCheck& tier, const std::vector<std::string>& slots) {
  const runtime::ProgramCheck& c = tier.check;
  std::string at = tier.at.empty() ? "" : absl::StrCat(" at ", AtText(tier, slots));
  std::fprintf(out, "%s tier%s (--policy %s): ", runtime::TierName(tier.tier), at.c_str(), PoliciesText(tier).c_str());
  if (c.compilable()) {
    std::fprintf(out, "compilable: %lld groups, %lld kernels, %lld GEMMs\n", static_cast<long long>(c.groups),
                 static_cast<long long>(c.kernels), static_cast<long long>(c.gemms));
    return;
  }
  std::fprintf(out, "NOT compilable: %zu problem(s)\n", c.problems.size());
  for (const runtime::CompileProblem& p : c.problems) {
    std::fprintf(out, "  %s: %s\n", Where(p).c_str(), Escaped(p.reason).c_str());
  }
}

nlohmann::json TierCheckJson(const runtime::TierCheck& tier, const std::vector<std::string>& slots) {
  nlohmann::json policies = nlohmann::json::array();
  for (runtime::SpecializationPolicy p : tier.policies) policies.push_back(runtime::SpecializationPolicyName(p));
  nlohmann::json at = nlohmann::json::object();
  for (size_t i = 0; i < tier.at.size() && i < slots.size(); ++i) at[slots[i]] = tier.at[i];
  nlohmann::json problems = nlohmann::json::array();
  for (const runtime::CompileProblem& p : tier.check.problems) {
    problems.push_back({{"node", p.node}, {"op_type", p.op_type}, {"reason", p.reason}});
  }
  return {{"tier", runtime::TierName(tier.tier)},
          {"policies", policies},
          {"at", at},
          {"compilable", tier.check.compilable()},
          {"groups", tier.check.groups},
          {"kernels", tier.check.kernels},
          {"gemms", tier.check.gemms},
          {"problems", problems}};
}

}  // namespace shapeshift::tools
