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
  int (*run)(const std::vector<std::string>& args);  // args exclude the subcommand
};

std::vector<Command>& CommandRegistry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command c) { CommandRegistry().push_back(c); }
};

}  // namespace shapeshift::tools

#define SHAPESHIFT_COMMAND(ident, name, summary, fn) \
  static ::shapeshift::tools::CommandRegistrar ident##_registrar({name, summary, fn})

#endif  // SHAPESHIFT_TOOLS_COMMAND_H_
