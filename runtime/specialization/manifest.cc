#include "runtime/specialization/manifest.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/constant_spill.h"
#include "nlohmann/json.hpp"

namespace shapeshift::runtime {
namespace {

using nlohmann::json;

constexpr int kManifestFormat = 1;

// FNV-1a over 64-bit words in four interleaved lanes (word i to lane
// i mod 4; then the tail bytes), fed incrementally: a key that is stable
// across processes (absl::Hash is seeded per process), without
// concatenating the weights. One lane is a chain of dependent multiplies
// (8 bytes per multiply's latency: a GPT-2's 500 MB took 0.15 s of every
// session's creation); four run side by side, at about the speed the pages
// come in. A collision would only make a model re-create another model's
// entry specs: every entry is compiled from this model's graph, so its
// guards stay right.
class StableHash {
 public:
  void Add(absl::string_view bytes) { AddLast(bytes, bytes.size()); }
  // The same as Add of the `size` bytes that `read(offset, dst, n)` reads,
  // a chunk at a time; false when a read fails.
  bool AddRead(size_t size, absl::FunctionRef<bool(int64_t offset, void* dst, size_t n)> read) {
    constexpr size_t kChunk = size_t{1} << 20;  // a multiple of kBlock
    std::vector<char> buffer(std::min(size, kChunk));
    size_t off = 0;
    for (; size - off > kChunk; off += kChunk) {
      if (!read(static_cast<int64_t>(off), buffer.data(), kChunk)) return false;
      MixBlocks(buffer.data(), kChunk);
    }
    const size_t rest = size - off;
    if (rest > 0 && !read(static_cast<int64_t>(off), buffer.data(), rest)) return false;
    AddLast(absl::string_view(buffer.data(), rest), size);
    return true;
  }
  void Add(uint64_t v) {
    for (int i = 0; i < 8; ++i) Mix(0, (v >> (8 * i)) & 0xff);
  }
  uint64_t value() const {
    uint64_t h = state_[0];
    for (int lane = 1; lane < kLanes; ++lane) h = (h ^ state_[lane]) * kPrime;
    return h;
  }

 private:
  static constexpr int kLanes = 4;  // MixBlocks' unrolled loop names each
  static constexpr size_t kBlock = 8 * kLanes;
  static constexpr uint64_t kPrime = 0x100000001b3ULL;
  void Mix(int lane, uint64_t word) { state_[lane] = (state_[lane] ^ word) * kPrime; }
  // `n` bytes, a multiple of kBlock: word i to lane i mod 4.
  void MixBlocks(const char* data, size_t n) {
    // The lanes in locals: kept in state_, each step would store and reload
    // them (the bytes may alias it), a store-forwarding delay per multiply.
    uint64_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
    for (size_t i = 0; i < n; i += kBlock) {
      uint64_t words[kLanes];
      std::memcpy(words, data + i, kBlock);
      a = (a ^ words[0]) * kPrime;
      b = (b ^ words[1]) * kPrime;
      c = (c ^ words[2]) * kPrime;
      d = (d ^ words[3]) * kPrime;
    }
    state_[0] = a, state_[1] = b, state_[2] = c, state_[3] = d;
  }
  // A field's last bytes (all of them, for Add): its whole blocks, then the
  // bytes after them (words, then bytes, to lane 0), then the field's size.
  void AddLast(absl::string_view last, size_t size) {
    const size_t blocks = last.size() / kBlock * kBlock;
    MixBlocks(last.data(), blocks);
    const absl::string_view tail = last.substr(blocks);
    size_t i = 0;
    for (; i + 8 <= tail.size(); i += 8) {
      uint64_t word;
      std::memcpy(&word, tail.data() + i, 8);
      Mix(0, word);
    }
    for (; i < tail.size(); ++i) Mix(0, static_cast<unsigned char>(tail[i]));
    Add(static_cast<uint64_t>(size));
  }

  uint64_t state_[kLanes] = {0xcbf29ce484222325ULL, 0xcbf29ce484222325ULL ^ 1, 0xcbf29ce484222325ULL ^ 2,
                             0xcbf29ce484222325ULL ^ 3};
};

json AtomJson(const AtomRecord& a) {
  return json{{"atom", a.atom}, {"pass", a.provenance.pass}, {"node", a.provenance.node}, {"reason", a.provenance.reason}};
}

}  // namespace

std::string ManifestKey(const Graph& graph, const ShapeEnv& env, const CompileOptions& options,
                        SpecializationPolicy policy, const BucketOptions& buckets) {
  StableHash h;
  h.Add(graph.ToString());
  for (const Value* c : graph.constants()) {
    h.Add(c->name());
    const void* data = c->constant()->raw();
    const size_t size = c->constant()->byte_size();
    // A spilled constant is read from its file (pread), not through the
    // mapping: none of its pages becomes resident for the key (the compile's
    // packing is about to need the memory). Where a read fails, through the
    // mapping, whose pages then go back.
    const SpilledRange range = SpilledRangeOf(data, size);
    if (range) {
      StableHash copy = h;
      if (copy.AddRead(size, [&](int64_t offset, void* dst, size_t n) { return ReadSpilled(range, offset, dst, n); })) {
        h = copy;
        continue;
      }
    }
    h.Add(absl::string_view(static_cast<const char*>(data), size));
    ReleaseResidentPages(data, size);
  }
  for (const SymbolInfo& s : env.symbols()) {
    h.Add(absl::StrCat(s.name, "=", s.min, "..", s.max));
  }
  h.Add(absl::StrCat("vector_width=", options.vector_width));
  // Another device is another set of entries (a CUDA run re-creating a CPU
  // run's entries would compile for the GPU at start-up, and without one
  // fail once per entry before its own compile fails). The CPU's keys stay
  // what they were.
  if (options.device != Device::kCpu) h.Add(absl::StrCat("device=", DeviceName(options.device)));
  h.Add(absl::StrCat("policy=", SpecializationPolicyName(policy)));
  h.Add(absl::StrCat("buckets=", BucketKindName(buckets.kind), ",", buckets.learned_buckets, ",",
                     buckets.learned_min_samples));
  return absl::StrFormat("m%016x", h.value());
}

std::string EncodeManifest(absl::string_view model_key, const std::vector<std::shared_ptr<const CacheEntry>>& entries) {
  json list = json::array();
  for (const std::shared_ptr<const CacheEntry>& e : entries) {
    json buckets = json::array();
    for (const Bucket& b : e->spec.buckets) buckets.push_back(json{{"lo", b.lo}, {"hi", b.hi}, {"learned", b.learned}});
    json guards = json::array();
    for (const GuardAtom& g : e->guards) guards.push_back(AtomJson({g.predicate.ToString(), g.provenance}));
    list.push_back(json{{"spec_tier", TierName(e->spec.tier)},
                        {"tier", TierName(e->tier)},
                        {"trigger", e->spec.trigger},
                        {"buckets", std::move(buckets)},
                        {"bucket_reasons", e->spec.bucket_reasons},
                        {"guards", std::move(guards)}});
  }
  // Provenance names nodes and values as the model spells them: bytes that
  // are not UTF-8 are replaced (U+FFFD) rather than making the dump throw.
  return json{{"format", kManifestFormat}, {"model", std::string(model_key)}, {"entries", std::move(list)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

absl::StatusOr<std::vector<ManifestEntry>> DecodeManifest(absl::string_view text, absl::string_view model_key) {
  // nlohmann reports every missing or mistyped field as an exception; they
  // stop here, as an error naming the field.
  try {
    const json j = json::parse(text.begin(), text.end());
    if (j.at("format").get<int>() != kManifestFormat) {
      return absl::InvalidArgumentError(absl::StrCat("manifest format ", j.at("format").dump(), " (expected ",
                                                     kManifestFormat, ")"));
    }
    if (j.at("model").get<std::string>() != model_key) {
      return absl::InvalidArgumentError(
          absl::StrCat("manifest of model ", j.at("model").dump(), ", expected \"", model_key, "\""));
    }
    std::vector<ManifestEntry> out;
    for (const json& e : j.at("entries")) {
      ManifestEntry m;
      absl::StatusOr<Tier> spec_tier = ParseTier(e.at("spec_tier").get<std::string>());
      if (!spec_tier.ok()) return spec_tier.status();
      absl::StatusOr<Tier> tier = ParseTier(e.at("tier").get<std::string>());
      if (!tier.ok()) return tier.status();
      m.spec.tier = *spec_tier;
      m.tier = *tier;
      m.spec.trigger = e.at("trigger").get<std::vector<int64_t>>();
      for (const json& b : e.at("buckets")) {
        m.spec.buckets.push_back({b.at("lo").get<int64_t>(), b.at("hi").get<int64_t>(), b.at("learned").get<bool>()});
      }
      m.spec.bucket_reasons = e.at("bucket_reasons").get<std::vector<std::string>>();
      for (const json& g : e.at("guards")) {
        m.guards.push_back({g.at("atom").get<std::string>(),
                            Provenance{g.at("pass").get<std::string>(), g.at("node").get<std::string>(),
                                       g.at("reason").get<std::string>()}});
      }
      out.push_back(std::move(m));
    }
    return out;
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed manifest: ", e.what()));
  }
}

}  // namespace shapeshift::runtime
