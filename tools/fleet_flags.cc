#include "tools/fleet_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/persist/signing.h"

namespace shapeshift::tools {
namespace {

constexpr char kUrl[] = "remote-cache";
constexpr char kKeyFile[] = "remote-cache-key-file";
constexpr char kTtl[] = "remote-cache-ttl-s";
constexpr char kMaxEntry[] = "remote-cache-max-entry-mb";
constexpr char kTimeout[] = "remote-cache-timeout-ms";
constexpr char kWait[] = "remote-cache-wait-s";

absl::Status PositiveNumber(const ParsedArgs& args, const char* flag, int64_t* out) {
  if (!args.Has(flag)) return absl::OkStatus();
  if (!absl::SimpleAtoi(args.Get(flag), out) || *out <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": expected a positive integer"));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> RemoteCacheFlagNames() { return {kUrl, kKeyFile, kTtl, kMaxEntry, kTimeout, kWait}; }

absl::StatusOr<runtime::persist::RemoteCacheOptions> RemoteCacheFromFlags(const ParsedArgs& args) {
  runtime::persist::RemoteCacheOptions options;
  if (!args.Has(kUrl)) {
    for (const char* flag : {kKeyFile, kTtl, kMaxEntry, kTimeout, kWait}) {
      if (args.Has(flag)) return absl::InvalidArgumentError(absl::StrCat("--", flag, " needs --remote-cache"));
    }
    return options;
  }
  options.url = args.Get(kUrl);
  if (absl::StatusOr<runtime::persist::RedisAddress> a = runtime::persist::ParseRedisUrl(options.url); !a.ok()) {
    return a.status();
  }
  if (!args.Has(kKeyFile)) {
    return absl::InvalidArgumentError(
        "--remote-cache needs --remote-cache-key-file FILE: entries are signed with that shared key, so a client "
        "without it cannot make the replicas run its machine code");
  }
  absl::StatusOr<std::string> key = runtime::persist::ReadSigningKeyFile(args.Get(kKeyFile));
  if (!key.ok()) return absl::InvalidArgumentError(absl::StrCat("--remote-cache-key-file: ", key.status().message()));
  options.signing_key = *std::move(key);
  int64_t ttl_s = 0, max_mb = 0, timeout_ms = 0, wait_s = 0;
  for (auto [flag, out] : {std::pair{kTtl, &ttl_s}, std::pair{kMaxEntry, &max_mb}, std::pair{kTimeout, &timeout_ms},
                           std::pair{kWait, &wait_s}}) {
    if (absl::Status s = PositiveNumber(args, flag, out); !s.ok()) return s;
  }
  if (ttl_s > 0) options.ttl_ms = ttl_s * 1000;
  if (max_mb > 0) options.max_entry_bytes = static_cast<uint64_t>(max_mb) << 20;
  if (timeout_ms > 0) options.timeout_ms = static_cast<int>(timeout_ms);
  if (wait_s > 0) options.wait_ms = wait_s * 1000;
  return options;
}

absl::StatusOr<std::string> SigningKeyFromFlags(const ParsedArgs& args) {
  if (!args.Has(kSignKeyFileFlag)) return std::string();
  absl::StatusOr<std::string> key = runtime::persist::ReadSigningKeyFile(args.Get(kSignKeyFileFlag));
  if (!key.ok()) return absl::InvalidArgumentError(absl::StrCat("--sign-key-file: ", key.status().message()));
  return key;
}

bool IsBundlePath(const std::string& model) { return absl::EndsWith(model, ".ssb"); }

void AddFleetReport(const runtime::Session& session, bool remote, nlohmann::ordered_json& report) {
  const runtime::SpecializationMetrics m = session.Metrics();
  report["llvm_compiles"] = m.llvm_compiles;
  if (!remote) return;
  report["remote"] = {{"loads", m.remote_loads},         {"waits", m.remote_waits},
                      {"wait_timeouts", m.remote_wait_timeouts}, {"hits", m.remote_hits},
                      {"misses", m.remote_misses},       {"refused", m.remote_refused},
                      {"errors", m.remote_errors},       {"too_large", m.remote_too_large},
                      {"bytes_read", m.remote_bytes_read}, {"bytes_written", m.remote_bytes_written}};
}

}  // namespace shapeshift::tools
