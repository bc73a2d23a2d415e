#include "runtime/persist/remote_cache.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "runtime/persist/signing.h"

namespace shapeshift::runtime::persist {
namespace {

// A signed value: magic, then the MAC, then the payload.
constexpr absl::string_view kSignedMagic("SSRC1");
constexpr size_t kSignedHeader = 5 + kSha256Bytes;

// Deletes the lease only when it still holds this process's token (it may
// have expired and been taken by another replica meanwhile).
constexpr char kReleaseScript[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

// Extends the lease only while it holds this process's token.
constexpr char kRenewScript[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

timeval ToTimeval(int ms) { return timeval{ms / 1000, static_cast<suseconds_t>((ms % 1000) * 1000)}; }

std::string UniqueToken() {
  static std::atomic<uint64_t> next{0};
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return absl::StrCat(host, ":", getpid(), ":", next++, ":", NowMs());
}

}  // namespace

void RemoteCache::Freer::operator()(redisContext* c) const { redisFree(c); }
void RemoteCache::Freer::operator()(redisReply* r) const { freeReplyObject(r); }

absl::StatusOr<RedisAddress> ParseRedisUrl(absl::string_view url) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--remote-cache '", url, "': ", why, " (expected redis://HOST:PORT[/DB])"));
  };
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "redis://")) return bad("only redis:// URLs are supported");
  RedisAddress address;
  if (size_t slash = rest.find('/'); slash != absl::string_view::npos) {
    if (!absl::SimpleAtoi(rest.substr(slash + 1), &address.db) || address.db < 0) return bad("DB must be an integer >= 0");
    rest = rest.substr(0, slash);
  }
  size_t colon = rest.rfind(':');
  if (colon == absl::string_view::npos) return bad("missing :PORT");
  address.host = std::string(rest.substr(0, colon));
  if (address.host.empty()) return bad("missing HOST");
  if (!absl::SimpleAtoi(rest.substr(colon + 1), &address.port) || address.port < 1 || address.port > 65535) {
    return bad("PORT must be 1..65535");
  }
  return address;
}

absl::StatusOr<std::unique_ptr<RemoteCache>> RemoteCache::Open(const RemoteCacheOptions& options) {
  absl::StatusOr<RedisAddress> address = ParseRedisUrl(options.url);
  if (!address.ok()) return address.status();
  if (options.signing_key.size() < kMinSigningKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "remote cache ", options.url, ": a signing key of at least ", kMinSigningKeyBytes,
        " bytes is required (--remote-cache-key-file): without one, anyone who can write to the server could "
        "make this process run their machine code"));
  }
  if (options.timeout_ms <= 0 || options.ttl_ms <= 0 || options.lease_ms <= 0 || options.wait_ms < 0 ||
      options.poll_ms <= 0) {
    return absl::InvalidArgumentError("remote cache: timeouts, TTL, lease and poll interval must be positive");
  }
  return std::unique_ptr<RemoteCache>(new RemoteCache(options, *std::move(address)));
}

RemoteCache::RemoteCache(RemoteCacheOptions options, RedisAddress address)
    : options_(std::move(options)), address_(std::move(address)), lease_token_(UniqueToken()) {}

RemoteCache::~RemoteCache() = default;

std::string RemoteCache::ValueKey(absl::string_view ns, absl::string_view key) const {
  return absl::StrCat(options_.prefix, ns, ":", key);
}
std::string RemoteCache::RecordsKey(absl::string_view model) const {
  return absl::StrCat(options_.prefix, "entries:", model);
}
std::string RemoteCache::LeaseKey(absl::string_view model, absl::string_view field) const {
  return absl::StrCat(options_.prefix, "lease:", model, ":", field);
}
std::string RemoteCache::Describe(absl::string_view ns, absl::string_view key) const {
  return absl::StrCat(options_.url, " ", ValueKey(ns, key));
}

std::string RemoteCache::Sign(absl::string_view signing_key, absl::string_view name, absl::string_view payload) {
  // The MAC covers the name, so a value copied under another key is refused;
  // the name's length first, so name and payload cannot trade bytes.
  const std::string mac = HmacSha256(signing_key, absl::StrCat(name.size(), ":", name, payload));
  return absl::StrCat(kSignedMagic, mac, payload);
}

RemoteCacheStats RemoteCache::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

int64_t RemoteCache::Rejected() const { return stats().refused; }

void RemoteCache::Problem(const std::string& text, int64_t RemoteCacheStats::*counter) {
  absl::MutexLock lock(&mu_);
  ++(stats_.*counter);
  stats_.last_problem = text;
  if (options_.warnings != nullptr) *options_.warnings << "shapeshift: remote cache: " << text << "\n";
}

void RemoteCache::DownLocked(const std::string& why) {
  context_.reset();
  down_until_ms_ = NowMs() + options_.retry_after_ms;
  ++stats_.errors;
  stats_.last_problem = why;
  // One line per outage, not one per lookup.
  if (!warned_down_ && options_.warnings != nullptr) {
    *options_.warnings << "shapeshift: remote cache: " << options_.url << ": " << why
                       << "; compiling locally, retrying every " << options_.retry_after_ms << " ms\n";
  }
  warned_down_ = true;
}

bool RemoteCache::ConnectLocked() {
  if (context_ != nullptr) return true;
  if (down_until_ms_ != 0 && NowMs() < down_until_ms_) return false;
  std::unique_ptr<redisContext, Freer> c(
      redisConnectWithTimeout(address_.host.c_str(), address_.port, ToTimeval(options_.timeout_ms)));
  if (c == nullptr || c->err != 0) {
    DownLocked(absl::StrCat("cannot connect: ", c != nullptr ? c->errstr : "out of memory"));
    return false;
  }
  redisSetTimeout(c.get(), ToTimeval(options_.timeout_ms));
  if (address_.db != 0) {
    Reply r(static_cast<redisReply*>(redisCommand(c.get(), "SELECT %d", address_.db)));
    if (r == nullptr || r->type == REDIS_REPLY_ERROR) {
      DownLocked(absl::StrCat("SELECT ", address_.db, " failed: ",
                              r == nullptr ? c->errstr : std::string(r->str, r->len)));
      return false;
    }
  }
  if (warned_down_ && options_.warnings != nullptr) {
    *options_.warnings << "shapeshift: remote cache: " << options_.url << ": connected again\n";
  }
  warned_down_ = false;
  down_until_ms_ = 0;
  context_ = std::move(c);
  return true;
}

RemoteCache::Reply RemoteCache::Command(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  absl::MutexLock lock(&mu_);
  if (!ConnectLocked()) {
    ++stats_.skipped;
    return nullptr;
  }
  Reply reply(static_cast<redisReply*>(
      redisCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(), lengths.data())));
  if (reply == nullptr) {
    // An I/O error or a timeout: the connection is unusable either way.
    DownLocked(absl::StrCat(args[0], " failed: ", context_->errstr));
    return nullptr;
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    // The server answered (e.g. OOM when full): it stays up for reads.
    ++stats_.errors;
    stats_.last_problem = absl::StrCat(args[0], ": ", std::string(reply->str, reply->len));
    if (options_.warnings != nullptr) {
      *options_.warnings << "shapeshift: remote cache: " << options_.url << ": " << stats_.last_problem << "\n";
    }
    return nullptr;
  }
  return reply;
}

std::optional<std::string> RemoteCache::Verify(const std::string& name, const std::string& value) {
  std::string why;
  if (value.size() < kSignedHeader || absl::string_view(value).substr(0, kSignedMagic.size()) != kSignedMagic) {
    why = value.size() < kSignedHeader ? "truncated or unsigned" : "unsigned (no shapeshift signature)";
  } else {
    absl::string_view payload = absl::string_view(value).substr(kSignedHeader);
    const std::string expected = Sign(options_.signing_key, name, payload);
    if (DigestsEqual(absl::string_view(expected).substr(kSignedMagic.size(), kSha256Bytes),
                     absl::string_view(value).substr(kSignedMagic.size(), kSha256Bytes))) {
      absl::MutexLock lock(&mu_);
      ++stats_.hits;
      stats_.bytes_read += static_cast<int64_t>(payload.size());
      return std::string(payload);
    }
    why = "bad signature (written without the key, altered, truncated, or stored under another key)";
  }
  Problem(absl::StrCat(options_.url, " ", name, ": ", why, "; refused, will be rebuilt"), &RemoteCacheStats::refused);
  absl::MutexLock lock(&mu_);
  ++stats_.misses;
  return std::nullopt;
}

absl::StatusOr<std::optional<std::string>> RemoteCache::Get(absl::string_view ns, absl::string_view key) {
  const std::string name = ValueKey(ns, key);
  Reply r = Command({"GET", name});
  if (r == nullptr || r->type != REDIS_REPLY_STRING) {
    absl::MutexLock lock(&mu_);
    ++stats_.misses;
    return std::nullopt;
  }
  return Verify(name, std::string(r->str, r->len));
}

absl::Status RemoteCache::Put(absl::string_view ns, absl::string_view key, absl::string_view payload) {
  const std::string name = ValueKey(ns, key);
  if (payload.size() > options_.max_entry_bytes) {
    Problem(absl::StrCat(name, ": ", payload.size(), " bytes exceed the entry size limit of ",
                         options_.max_entry_bytes, "; not written"),
            &RemoteCacheStats::too_large);
    return absl::ResourceExhaustedError(absl::StrCat(name, ": over the remote entry size limit"));
  }
  Reply r = Command({"SET", name, Sign(options_.signing_key, name, payload), "PX", absl::StrCat(options_.ttl_ms)});
  if (r == nullptr) return absl::UnavailableError(absl::StrCat(Describe(ns, key), ": not written (see warnings)"));
  absl::MutexLock lock(&mu_);
  ++stats_.writes;
  stats_.bytes_written += static_cast<int64_t>(payload.size());
  return absl::OkStatus();
}

std::vector<std::pair<std::string, std::string>> RemoteCache::GetRecords(absl::string_view model) {
  const std::string name = RecordsKey(model);
  std::vector<std::pair<std::string, std::string>> out;
  Reply r = Command({"HGETALL", name});
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return out;
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    const redisReply* field = r->element[i];
    const redisReply* value = r->element[i + 1];
    if (field->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING) continue;
    std::string f(field->str, field->len);
    std::optional<std::string> payload = Verify(absl::StrCat(name, "#", f), std::string(value->str, value->len));
    if (payload.has_value()) out.emplace_back(std::move(f), *std::move(payload));
  }
  return out;
}

std::optional<std::string> RemoteCache::GetRecord(absl::string_view model, absl::string_view field) {
  const std::string name = RecordsKey(model);
  Reply r = Command({"HGET", name, std::string(field)});
  if (r == nullptr || r->type != REDIS_REPLY_STRING) return std::nullopt;
  return Verify(absl::StrCat(name, "#", field), std::string(r->str, r->len));
}

absl::Status RemoteCache::PutRecord(absl::string_view model, absl::string_view field, absl::string_view payload) {
  const std::string name = RecordsKey(model);
  if (payload.size() > options_.max_entry_bytes) {
    Problem(absl::StrCat(name, "#", field, ": ", payload.size(), " bytes exceed the entry size limit; not written"),
            &RemoteCacheStats::too_large);
    return absl::ResourceExhaustedError(absl::StrCat(name, "#", field, ": over the remote entry size limit"));
  }
  const std::string signed_value = Sign(options_.signing_key, absl::StrCat(name, "#", field), payload);
  if (Command({"HSET", name, std::string(field), signed_value}) == nullptr) {
    return absl::UnavailableError(absl::StrCat(options_.url, " ", name, "#", field, ": not written (see warnings)"));
  }
  Command({"PEXPIRE", name, absl::StrCat(options_.ttl_ms)});
  absl::MutexLock lock(&mu_);
  ++stats_.writes;
  stats_.bytes_written += static_cast<int64_t>(payload.size());
  return absl::OkStatus();
}

RemoteCache::Lease RemoteCache::TryLease(absl::string_view model, absl::string_view field) {
  Reply r = Command({"SET", LeaseKey(model, field), lease_token_, "NX", "PX", absl::StrCat(options_.lease_ms)});
  if (r == nullptr) return Lease::kUnavailable;
  if (r->type == REDIS_REPLY_NIL) return Lease::kHeldByAnother;
  absl::MutexLock lock(&mu_);
  ++stats_.leases;
  return Lease::kAcquired;
}

void RemoteCache::ReleaseLease(absl::string_view model, absl::string_view field) {
  Command({"EVAL", kReleaseScript, "1", LeaseKey(model, field), lease_token_});
}

bool RemoteCache::RenewLease(absl::string_view model, absl::string_view field) {
  Reply r = Command({"EVAL", kRenewScript, "1", LeaseKey(model, field), lease_token_, absl::StrCat(options_.lease_ms)});
  return r != nullptr && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
}

RemoteCache::LeaseKeeper::LeaseKeeper(RemoteCache* cache, std::string model, std::string field) {
  const absl::Duration every = absl::Milliseconds(std::max<int64_t>(1, cache->options().lease_ms / 3));
  thread_ = std::thread([this, cache, model = std::move(model), field = std::move(field), every] {
    absl::MutexLock lock(&mu_);
    while (!mu_.AwaitWithTimeout(absl::Condition(&stop_), every)) {
      mu_.Unlock();
      const bool held = cache->RenewLease(model, field);
      mu_.Lock();
      if (!held) return;  // lost (expired and taken, or the server is down): nothing left to keep
    }
  });
}

RemoteCache::LeaseKeeper::~LeaseKeeper() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

}  // namespace shapeshift::runtime::persist
