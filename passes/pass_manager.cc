#include "passes/pass_manager.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"

namespace shapeshift::passes {

void PassManager::Add(std::string name, GraphPassFn pass) {
  passes_.push_back({std::move(name), std::move(pass)});
}

std::vector<std::string> PassManager::names() const {
  std::vector<std::string> out;
  for (const NamedPass& p : passes_) out.push_back(p.name);
  return out;
}

absl::StatusOr<bool> PassManager::Run(Graph& graph, ShapeEnv& env) const {
  bool any_change = false;
  for (const NamedPass& pass : passes_) {
    absl::StatusOr<bool> changed = pass.run(graph, env);
    if (!changed.ok()) {
      return absl::Status(changed.status().code(),
                          absl::StrCat("pass '", pass.name, "': ", changed.status().message()));
    }
    if (options_.verify_each_pass) {
      if (absl::Status s = graph.Verify(); !s.ok()) {
        return absl::InternalError(
            absl::StrCat("pass '", pass.name, "' left an invalid graph: ", s.message()));
      }
    }
    any_change = any_change || *changed;
    if (ShouldPrintAfter(pass.name)) PrintIfRequested(pass.name, graph.ToString());
  }
  return any_change;
}

absl::Status PassManager::RunToFixpoint(Graph& graph, ShapeEnv& env, int max_rounds) const {
  for (int round = 0; round < max_rounds; ++round) {
    absl::StatusOr<bool> changed = Run(graph, env);
    if (!changed.ok()) return changed.status();
    if (!*changed) break;
  }
  return absl::OkStatus();
}

bool PassManager::ShouldPrintAfter(const std::string& name) const {
  const auto& wanted = options_.print_after;
  return std::find(wanted.begin(), wanted.end(), name) != wanted.end();
}

void PassManager::PrintIfRequested(const std::string& name, const std::string& text) const {
  if (!ShouldPrintAfter(name)) return;
  std::ostream& os = options_.print_stream ? *options_.print_stream : std::cerr;
  os << "// ----- after " << name << " -----\n" << text;
  if (!text.empty() && text.back() != '\n') os << '\n';
}

}  // namespace shapeshift::passes
