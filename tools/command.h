// Subcommand registry for the `shapeshift` CLI. Each cmd_*.cc file defines one
// subcommand and registers it with SHAPESHIFT_COMMAND; main.cc dispatches.
//
// Exit codes shared by every subcommand: 0 success, 1 a negative answer (e.g.
// `prove` found an uncovered shape, `conformance` had failures), 2 bad usage
// or bad input (the message names the flag, file or node at fault).
#ifndef SHAPESHIFT_TOOLS_COMMAND_H_
#define SHAPESHIFT_TOOLS_COMMAND_H_

#include <string>
#include <vector>

namespace shapeshift::tools {

constexpr int kExitOk = 0;
constexpr int kExitNegative = 1;
constexpr int kExitUsage = 2;

struct Command {
  const char* name;
  const char* summary;  // one line for `shapeshift help`
  // The subcommand's whole usage text (ends in '\n'): printed by `NAME --help`
  // and `help NAME` (stdout, exit 0) and after a usage error (stderr). The
  // one copy lives in the subcommand's cmd_*.cc, as its kUsage.
  const char* usage;
  int (*run)(const std::vector<std::string>& args);  // args exclude the subcommand
};

std::vector<Command>& CommandRegistry();

// The usage error every subcommand prints: `shapeshift NAME: MESSAGE`
// (escaped: it may quote a model's names), then `usage` unless it is null;
// returns kExitUsage.
int UsageError(const char* name, const char* usage, const std::string& message);

struct CommandRegistrar {
  explicit CommandRegistrar(Command c) { CommandRegistry().push_back(c); }
};

}  // namespace shapeshift::tools

#define SHAPESHIFT_COMMAND(ident, name, summary, usage, fn) \
  static ::shapeshift::tools::CommandRegistrar ident##_registrar({name, summary, usage, fn})

#endif  // SHAPESHIFT_TOOLS_COMMAND_H_
