// `shapeshift SUBCOMMAND ...`: dispatches to the registered subcommands.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/command.h"

namespace shapeshift::tools {

std::vector<Command>& CommandRegistry() {
  static std::vector<Command> registry;
  return registry;
}

namespace {

void PrintUsage(FILE* out) {
  std::fprintf(out, "usage: shapeshift SUBCOMMAND [flags]\n\nsubcommands:\n");
  auto cmds = CommandRegistry();
  std::sort(cmds.begin(), cmds.end(),
            [](const Command& a, const Command& b) { return std::string(a.name) < b.name; });
  for (const Command& c : cmds) std::fprintf(out, "  %-13s %s\n", c.name, c.summary);
}

}  // namespace
}  // namespace shapeshift::tools

int main(int argc, char** argv) {
  using namespace shapeshift::tools;
  if (argc < 2) {
    PrintUsage(stderr);
    return kExitUsage;
  }
  std::string name = argv[1];
  if (name == "help" || name == "--help" || name == "-h") {
    PrintUsage(stdout);
    return kExitOk;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Command& c : CommandRegistry()) {
    if (name == c.name) return c.run(args);
  }
  std::fprintf(stderr, "shapeshift: unknown subcommand '%s'\n\n", name.c_str());
  PrintUsage(stderr);
  return kExitUsage;
}
