// AOT bundles end to end in one process: a bundle compiled from MiniEncoder
// serves with 0 compiles and 0 LLVM compiles and bit-identical outputs; its
// certificate is Z3's answer over the entries' real guards; a bundle whose
// recorded target differs from this machine (features, compiler) is refused
// naming the difference; the header describes exactly what the objects were
// compiled for.
#include "runtime/bundle/bundle.h"

#include <filesystem>
#include <sstream>

#include "codegen/cpu/object_store.h"
#include "graph/constant_spill.h"
#include "onnx/onnx_pb.h"
#include "gtest/gtest.h"
#include "runtime/specialization/manifest.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/support/temp_path.h"

namespace shapeshift::runtime::bundle {
namespace {

constexpr char kKey[] = "bundle-test-signing-key";

ImportedModel Mini() {
  runtime::testing::BuiltModel built = runtime::testing::MiniEncoder(/*max_seq=*/64);
  ImportedModel m;
  m.graph = std::move(built.graph);
  m.env = std::move(built.env);
  return m;
}

std::vector<Tensor> Inputs(int64_t seq) { return runtime::testing::TokenInputs(1, seq, 50, static_cast<uint32_t>(seq)); }

absl::StatusOr<BundleSummary> Compile(SpecializationPolicy policy, const std::string& path, std::string key = "",
                                      std::vector<int64_t> warm = {}) {
  BundleCompileOptions options;
  options.source = "mini-encoder";
  options.policy = policy;
  options.signing_key = std::move(key);
  if (!warm.empty()) {
    options.warm = [warm](Session& s) -> absl::Status {
      for (int64_t seq : warm) {
        absl::StatusOr<std::vector<Tensor>> out = s.Run(Inputs(seq));
        if (!out.ok()) return out.status();
      }
      return absl::OkStatus();
    };
  }
  return CompileBundle(Mini(), options, path);
}

absl::StatusOr<std::unique_ptr<Session>> Open(const std::string& path, const std::string& key = "") {
  absl::StatusOr<Bundle> bundle = ReadBundle(path, key);
  if (!bundle.ok()) return bundle.status();
  absl::StatusOr<ImportedModel> model = ImportBundleModel(*bundle);
  if (!model.ok()) return model.status();
  return OpenBundleSession(*bundle, *std::move(model), {});
}

// Rewrites a bundle's header the way a build on another machine would have
// written it, then re-checksums and re-signs with the same key.
void RewriteHeader(const std::string& path, const std::string& key,
                   const std::function<void(nlohmann::json&)>& edit) {
  std::string bytes = ReadFileBytes(path).value();
  BundleContents contents = DecodeBundle(bytes, key, path).value();
  edit(contents.header);
  ASSERT_TRUE(WriteFileAtomically(path, EncodeBundle(contents, key).value()).ok());
}

TEST(BundleTest, APolymorphicBundleServesWithZeroCompilesAndTheSameOutputs) {
  const std::string path = shapeshift::testing::ProcessTempPath("poly.ssb");
  absl::StatusOr<BundleSummary> summary = Compile(SpecializationPolicy::kPolymorphic, path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->compiles, 1);
  EXPECT_EQ(summary->header.entries, 1);
  EXPECT_GT(summary->header.objects, 0);
  EXPECT_EQ(summary->header.certificate.verdict, "covered");
  EXPECT_EQ(summary->header.certificate.solver.rfind("Z3 ", 0), 0u);
  EXPECT_NE(summary->header.certificate.query.find("(check-sat)"), std::string::npos);

  absl::StatusOr<std::unique_ptr<Session>> loaded = Open(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const DispatcherStats stats = (*loaded)->stats().dispatcher;
  EXPECT_EQ(stats.compiles, 0);
  EXPECT_EQ(stats.llvm_compiles, 0);
  EXPECT_EQ(stats.cache_loads, 1);
  EXPECT_TRUE((*loaded)->events().empty());

  // The same model compiled normally computes bit-identical outputs: the
  // same machine code, linked from the bundle instead of generated.
  runtime::testing::BuiltModel reference_model = runtime::testing::MiniEncoder(64);
  SessionOptions plain;
  plain.policy = SpecializationPolicy::kPolymorphic;
  std::unique_ptr<Session> reference =
      Session::Create(ModelSource::Built(std::move(reference_model.graph), std::move(reference_model.env)), plain)
          .value();
  for (int64_t seq : {1, 7, 33, 64}) {
    std::vector<Tensor> a = (*loaded)->Run(Inputs(seq)).value();
    std::vector<Tensor> b = reference->Run(Inputs(seq)).value();
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(runtime::testing::MaxAbsDiff(a[0], b[0]), 0.0) << "seq=" << seq;
  }
  EXPECT_EQ((*loaded)->stats().dispatcher.compiles, 0) << "the proven domain never compiles";
}

// A bundle holds weights of any size: they are a record of their own, not
// part of the ONNX message protobuf caps at 2 GiB (the 1.1B Llama's 4.4 GB was
// refused before). Here a 2 GiB + 64 B embedding table whose last row lies past
// byte 2^31 of the record: bundled, read back (weights file to file into a
// spill) and served, its first and last rows as written. Only those rows'
// pages are written in this process; the rest are never-touched zero pages.
TEST(BundleTest, AModelOverTwoGibOfWeightsBundlesAndServesFromTheFile) {
  constexpr int64_t kRows = (int64_t{1} << 25) + 1, kWidth = 16;
  absl::StatusOr<Tensor> table = Tensor::Uninitialized(DType::kF32, {kRows, kWidth}, [](size_t bytes) {
    return std::shared_ptr<std::byte[]>(new std::byte[bytes]);
  });
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_GT(table->byte_size(), size_t{1} << 31);
  float* t = table->mutable_data<float>();
  for (int64_t k = 0; k < kWidth; ++k) {
    t[k] = static_cast<float>(k + 1);
    t[(kRows - 1) * kWidth + k] = -0.5f * static_cast<float>(k + 1);
  }
  runtime::testing::ModelBuilder m;
  Value* ids = m.In("ids", {m.Dim("n", 1, 4)}, DType::kI64);
  m.graph().AddOutput(m.Op("Gather", {m.graph().AddConstant("table", *std::move(table)), ids}));
  runtime::testing::BuiltModel built = m.Finish();
  ImportedModel model;
  model.graph = std::move(built.graph);
  model.env = std::move(built.env);

  const std::string path = shapeshift::testing::ProcessTempPath("huge.ssb");
  BundleCompileOptions options;
  options.source = "a 2 GiB embedding table";
  options.policy = SpecializationPolicy::kPolymorphic;
  absl::StatusOr<BundleSummary> summary = CompileBundle(std::move(model), options, path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_GT(summary->bytes, uint64_t{1} << 31);

  absl::StatusOr<Bundle> bundle = ReadBundle(path, "");
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  EXPECT_LT(bundle->model_onnx.size(), size_t{1} << 16);  // the message holds no weights
  EXPECT_GT(bundle->weights.size, uint64_t{1} << 31);
  absl::StatusOr<std::unique_ptr<ConstantSpill>> spill = ConstantSpill::Open(::testing::TempDir());
  ASSERT_TRUE(spill.ok()) << spill.status();
  absl::StatusOr<ImportedModel> imported = ImportBundleModel(*bundle, spill->get());
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_GT((*spill)->bytes_written(), int64_t{1} << 31);
  spill->reset();
  std::filesystem::remove(path);  // served from the spill: the bundle file is no longer needed
  absl::StatusOr<std::unique_ptr<Session>> session = OpenBundleSession(*bundle, *std::move(imported), {});
  ASSERT_TRUE(session.ok()) << session.status();
  absl::StatusOr<std::vector<Tensor>> out =
      (*session)->Run({Tensor::FromVector<int64_t>(DType::kI64, {3}, {kRows - 1, 0, kRows - 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->at(0).shape(), (std::vector<int64_t>{3, kWidth}));
  const float* o = out->at(0).data<float>();
  for (int64_t k = 0; k < kWidth; ++k) {
    EXPECT_EQ(o[k], -0.5f * static_cast<float>(k + 1)) << k;
    EXPECT_EQ(o[kWidth + k], static_cast<float>(k + 1)) << k;
    EXPECT_EQ(o[2 * kWidth + k], -0.5f * static_cast<float>(k + 1)) << k;
  }
  EXPECT_EQ((*session)->stats().dispatcher.compiles, 0);
}

// The weights are read from the bundle by name after its checksum was
// verified: a file replaced in between (a new compile renamed over it) is
// refused, never served with the other file's weights.
TEST(BundleTest, ABundleReplacedAfterItsChecksumIsRefused) {
  const std::string path = shapeshift::testing::ProcessTempPath("replaced.ssb");
  ASSERT_TRUE(Compile(SpecializationPolicy::kPolymorphic, path).ok());
  absl::StatusOr<Bundle> bundle = ReadBundle(path, "");
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  ASSERT_TRUE(Compile(SpecializationPolicy::kPolymorphic, path).ok());
  absl::StatusOr<ImportedModel> model = ImportBundleModel(*bundle);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition) << model.status();
  EXPECT_NE(model.status().message().find("changed after its checksum"), std::string::npos) << model.status();
  EXPECT_TRUE(ImportBundleModel(ReadBundle(path, "").value()).ok());
}

// The model record's initializers may name only the weights record, within
// its bytes and with a length (without one the importer would read to the
// end of the file): a record pointing at another file of the directory,
// past the record's end, or without a length, is damage — even correctly
// checksummed.
TEST(BundleTest, AModelRecordNamingAnotherFileOrRangeIsRefused) {
  const std::string path = shapeshift::testing::ProcessTempPath("aimed.ssb");
  ASSERT_TRUE(Compile(SpecializationPolicy::kPolymorphic, path).ok());
  const std::string original = ReadFileBytes(path).value();
  struct Forgery {
    std::string key, value, expected;
  };
  for (const Forgery& f : {Forgery{"location", "poly.ssb", "names the file 'poly.ssb'"},
                           Forgery{"offset", "99999999999", "outside the"},
                           Forgery{"length", "", "has external data length ''"},
                           Forgery{"length", "(removed)", "no location or no length"}}) {
    SCOPED_TRACE(f.key);
    BundleContents contents = DecodeBundle(original, "", path).value();
    for (BundleRecord& r : contents.records) {
      if (r.ns != kModelNamespace) continue;
      onnx::ModelProto proto;
      ASSERT_TRUE(proto.ParseFromString(r.payload));
      auto* entries = proto.mutable_graph()->mutable_initializer(0)->mutable_external_data();
      for (int i = entries->size() - 1; i >= 0; --i) {
        if (entries->Get(i).key() != f.key) continue;
        if (f.value == "(removed)") {
          entries->DeleteSubrange(i, 1);
        } else {
          entries->Mutable(i)->set_value(f.value);
        }
      }
      r.payload = proto.SerializeAsString();
    }
    ASSERT_TRUE(WriteFileAtomically(path, EncodeBundle(contents, "").value()).ok());
    absl::StatusOr<Bundle> bundle = ReadBundle(path, "");
    ASSERT_TRUE(bundle.ok()) << bundle.status();
    absl::Status s = ImportBundleModel(*bundle).status();
    EXPECT_TRUE(absl::IsDataLoss(s)) << s;
    EXPECT_NE(s.message().find(f.expected), std::string::npos) << s;
  }
}

TEST(BundleTest, AWarmedStaticBundleCertifiesItsGapAndLoadsEveryEntry) {
  const std::string path = shapeshift::testing::ProcessTempPath("static.ssb");
  absl::StatusOr<BundleSummary> summary = Compile(SpecializationPolicy::kStatic, path, "", {5, 9});
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->header.entries, 2);
  const CoverageCertificate& c = summary->header.certificate;
  EXPECT_EQ(c.verdict, "uncovered");
  ASSERT_TRUE(c.witness.count("seq"));
  EXPECT_NE(c.witness.at("seq"), 5);
  EXPECT_NE(c.witness.at("seq"), 9);
  ASSERT_EQ(c.guard_sets.size(), 2u);

  absl::StatusOr<std::unique_ptr<Session>> loaded = Open(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->stats().dispatcher.cache_loads, 2);
  // The certificate is about the guards the re-created entries check.
  const SpecializationCache& cache = (*loaded)->dispatcher().cache();
  EXPECT_TRUE(RecheckCertificate(c, (*loaded)->dispatcher().env().DomainPredicate(), EntryGuardSets(cache)).ok());
  ASSERT_TRUE((*loaded)->Run(Inputs(9)).ok());
  EXPECT_EQ((*loaded)->stats().dispatcher.compiles, 0);
}

TEST(BundleTest, ARecheckFailsWhenTheGuardsOrTheAnswerDiffer) {
  const std::string path = shapeshift::testing::ProcessTempPath("recheck.ssb");
  absl::StatusOr<BundleSummary> summary = Compile(SpecializationPolicy::kStatic, path, "", {5});
  ASSERT_TRUE(summary.ok()) << summary.status();
  const CoverageCertificate& c = summary->header.certificate;
  absl::StatusOr<std::vector<std::vector<Predicate>>> sets = ParseGuardSets(c.guard_sets);
  ASSERT_TRUE(sets.ok()) << sets.status();
  ImportedModel model = Mini();
  const Predicate domain = model.env->DomainPredicate();
  EXPECT_TRUE(RecheckCertificate(c, domain, *sets).ok());
  // A guard set someone widened (seq == 5 → seq >= 1) is not what was certified.
  std::vector<std::vector<Predicate>> widened = {{ParsePredicate("seq >= 1").value()}};
  absl::Status s = RecheckCertificate(c, domain, widened);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("guard sets"), std::string::npos) << s;
  // A certificate whose verdict was edited to "covered" is contradicted by Z3.
  CoverageCertificate edited = c;
  edited.verdict = "covered";
  edited.witness.clear();
  s = RecheckCertificate(edited, domain, *sets);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("answers 'uncovered'"), std::string::npos) << s;
}

// A bundle whose recorded CPU features differ from this machine's is refused.
// The test rewrites the recorded feature set and re-checksums/re-signs: the
// loader's only knowledge of the building machine is that header (written by
// CompileBundle from DetectHostTarget(), the same detection the backend keys
// objects with — checked below), so a header with other features is exactly
// what a bundle from another CPU presents.
TEST(BundleTest, ABundleForOtherCpuFeaturesIsRefusedNamingThem) {
  const std::string path = shapeshift::testing::ProcessTempPath("features.ssb");
  ASSERT_TRUE(Compile(SpecializationPolicy::kPolymorphic, path, kKey).ok());
  std::string flipped;
  RewriteHeader(path, kKey, [&](nlohmann::json& h) {
    std::string features = h["target"]["features"].get<std::string>();
    // The first feature, turned around: "+avx512f" becomes "-avx512f".
    const size_t end = features.find(',');
    flipped = features.substr(1, end == std::string::npos ? std::string::npos : end - 1);
    features[0] = features[0] == '+' ? '-' : '+';
    h["target"]["features"] = features;
  });
  absl::StatusOr<std::unique_ptr<Session>> loaded = Open(path, kKey);
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(loaded.status())) << loaded.status();
  EXPECT_NE(loaded.status().message().find("CPU features"), std::string::npos) << loaded.status();
  EXPECT_NE(loaded.status().message().find(flipped), std::string::npos) << loaded.status();
}

TEST(BundleTest, ABundleFromAnotherShapeshiftBuildOrLlvmIsRefused) {
  const std::string path = shapeshift::testing::ProcessTempPath("build.ssb");
  ASSERT_TRUE(Compile(SpecializationPolicy::kPolymorphic, path).ok());
  RewriteHeader(path, "", [](nlohmann::json& h) {
    h["target"]["compiler"] = "shapeshift 0.0.1 build 00ff";
    h["target"]["llvm"] = "13.0.1";
  });
  absl::StatusOr<std::unique_ptr<Session>> loaded = Open(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("compiler 'shapeshift 0.0.1 build 00ff'"), std::string::npos)
      << loaded.status();
  EXPECT_NE(loaded.status().message().find("LLVM '13.0.1'"), std::string::npos) << loaded.status();
}

TEST(BundleTest, TheHeaderTargetIsWhatTheObjectsWereCompiledFor) {
  const std::string path = shapeshift::testing::ProcessTempPath("target.ssb");
  ASSERT_TRUE(Compile(SpecializationPolicy::kPolymorphic, path).ok());
  absl::StatusOr<BundleContents> contents = DecodeBundle(ReadFileBytes(path).value(), "", path);
  ASSERT_TRUE(contents.ok()) << contents.status();
  const BundleHeader header = HeaderFromJson(contents->header).value();
  int objects = 0;
  for (const BundleRecord& r : contents->records) {
    if (r.ns != persist::kObjectNamespace) continue;
    ++objects;
    codegen::cpu::ObjectRecord record = codegen::cpu::DecodeObjectRecord(r.payload).value();
    EXPECT_NE(record.key_material.find("compiler: " + header.target.compiler + "\n"), std::string::npos);
    EXPECT_NE(record.key_material.find("llvm: " + header.target.llvm_version + "\n"), std::string::npos);
    EXPECT_NE(record.key_material.find("triple: " + header.target.triple + "\n"), std::string::npos);
    EXPECT_NE(record.key_material.find("cpu: " + header.target.cpu + "\nfeatures: " + header.target.features + "\n"),
              std::string::npos);
  }
  EXPECT_GT(objects, 0);
}

TEST(BundleTest, ASignedBundleNeedsItsKey) {
  const std::string path = shapeshift::testing::ProcessTempPath("signed.ssb");
  ASSERT_TRUE(Compile(SpecializationPolicy::kPolymorphic, path, kKey).ok());
  EXPECT_TRUE(absl::IsPermissionDenied(ReadBundle(path, "").status()));
  EXPECT_TRUE(absl::IsPermissionDenied(ReadBundle(path, "some-other-key-16b").status()));
  absl::StatusOr<std::unique_ptr<Session>> loaded = Open(path, kKey);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->stats().dispatcher.compiles, 0);
}

}  // namespace
}  // namespace shapeshift::runtime::bundle
