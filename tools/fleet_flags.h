// The fleet flags of `run`, `prove` and `compile`: the remote compile cache
// (`--remote-cache redis://HOST:PORT[/DB] --remote-cache-key-file FILE`, with
// `--remote-cache-ttl-s`, `--remote-cache-max-entry-mb`,
// `--remote-cache-timeout-ms`, `--remote-cache-wait-s`), bundles
// (`MODEL.ssb` in place of a model, `--sign-key-file FILE`), and the report
// fields they add.
//
// Why the key file is required with --remote-cache: the server is shared, so
// unsigned entries would let anyone who can write to it hand this process
// machine code (runtime/persist/remote_cache.h).
#ifndef SHAPESHIFT_TOOLS_FLEET_FLAGS_H_
#define SHAPESHIFT_TOOLS_FLEET_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "runtime/persist/remote_cache.h"
#include "runtime/session.h"
#include "tools/args.h"

namespace shapeshift::tools {

constexpr char kSignKeyFileFlag[] = "sign-key-file";

// The valued flags above, for FlagSpec::valued.
std::vector<std::string> RemoteCacheFlagNames();

// Off (empty url) without --remote-cache. Errors name the flag: a bad URL,
// a missing or short key file, a malformed number, or tuning flags without
// --remote-cache.
absl::StatusOr<runtime::persist::RemoteCacheOptions> RemoteCacheFromFlags(const ParsedArgs& args);

// The key of --sign-key-file, or "" when absent.
absl::StatusOr<std::string> SigningKeyFromFlags(const ParsedArgs& args);

// A MODEL argument naming a bundle (`*.ssb`).
bool IsBundlePath(const std::string& model);

// The report's fleet fields: `llvm_compiles`, and with a remote cache a
// `remote` object (loads, waits, wait timeouts, hits, misses, refused,
// errors, too_large, bytes_read, bytes_written).
void AddFleetReport(const runtime::Session& session, bool remote, nlohmann::ordered_json& report);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_FLEET_FLAGS_H_
