// `shapeshift SUBCOMMAND ...`: dispatches to the registered subcommands.
//
// Help is handled here, once for every subcommand: `shapeshift help` lists
// them, `shapeshift help NAME` and `shapeshift NAME ... --help` (or `-h`)
// print NAME's own usage (Command::usage) on stdout and exit 0. After the
// subcommand returns, standard output is flushed and checked: a report that
// could not be written (`> /dev/full`, a closed pipe's EPIPE) is exit 2 with
// a message, never a silent success.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/command.h"
#include "tools/terminal_text.h"

namespace shapeshift::tools {

std::vector<Command>& CommandRegistry() {
  static std::vector<Command> registry;
  return registry;
}

int UsageError(const char* name, const char* usage, const std::string& message) {
  ReportError(name, kExitUsage, message);
  if (usage != nullptr) std::fputs(usage, stderr);
  return kExitUsage;
}

namespace {

void PrintCommandList(FILE* out) {
  std::fprintf(out, "usage: shapeshift SUBCOMMAND [flags]\n       shapeshift help SUBCOMMAND   "
                    "(or SUBCOMMAND --help): its flags\n\nsubcommands:\n");
  auto cmds = CommandRegistry();
  std::sort(cmds.begin(), cmds.end(),
            [](const Command& a, const Command& b) { return std::string(a.name) < b.name; });
  for (const Command& c : cmds) std::fprintf(out, "  %-13s %s\n", c.name, c.summary);
}

const Command* FindCommand(const std::string& name) {
  for (const Command& c : CommandRegistry()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

int UnknownCommand(const std::string& name) {
  ReportError("", kExitUsage, absl::StrCat("unknown subcommand '", name, "'"));
  std::fputc('\n', stderr);
  PrintCommandList(stderr);
  return kExitUsage;
}

bool AsksForHelp(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
}

int Dispatch(const std::vector<std::string>& argv) {
  if (argv.empty()) {
    PrintCommandList(stderr);
    return kExitUsage;
  }
  const std::string& name = argv[0];
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  if (name == "help" || name == "--help" || name == "-h") {
    if (args.empty()) {
      PrintCommandList(stdout);
      return kExitOk;
    }
    if (args.size() > 1) return UsageError("help", nullptr, "expected one SUBCOMMAND (shapeshift help SUBCOMMAND)");
    const Command* c = FindCommand(args[0]);
    if (c == nullptr) return UnknownCommand(args[0]);
    std::fputs(c->usage, stdout);
    return kExitOk;
  }
  const Command* c = FindCommand(name);
  if (c == nullptr) return UnknownCommand(name);
  if (AsksForHelp(args)) {
    std::fputs(c->usage, stdout);
    return kExitOk;
  }
  return c->run(args);
}

}  // namespace
}  // namespace shapeshift::tools

int main(int argc, char** argv) {
  using namespace shapeshift::tools;
  const int code = Dispatch(std::vector<std::string>(argv + 1, argv + argc));
  std::string why;
  if (!FlushedCleanly(stdout, &why)) {
    ReportError(argc > 1 ? argv[1] : "", kExitUsage, absl::StrCat("cannot write to standard output: ", why));
    return kExitUsage;
  }
  return code;
}
