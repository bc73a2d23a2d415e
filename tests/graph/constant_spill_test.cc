#include "graph/constant_spill.h"

#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/builder.h"
#include "graph/onnx/importer.h"
#include "onnx/onnx_pb.h"
#include "tests/graph/onnx_test_model.h"
#include "tests/support/mapped_pages.h"
#include "shapes/shape_env.h"
#include "graph/interpreter.h"
#include "gtest/gtest.h"

namespace shapeshift {
namespace {

// Resident pages of this process (/proc/self/statm's second field), in bytes.
int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

Tensor Ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i % 9973) * 0.5f - 7.0f;
  return Tensor::FromVector(DType::kF32, {n}, v);
}

// The disk under the build tree, not /tmp (tmpfs on some machines).
std::string DiskDir(const std::string& name) {
  std::filesystem::path dir = std::filesystem::current_path() / absl::StrCat("constant_spill_", name, "_", getpid());
  std::filesystem::remove_all(dir);
  return dir.string();
}

TEST(ConstantSpillTest, SpilledTensorHoldsTheSameBytesAndIsResidentOnlyWhileRead) {
  const std::string dir = DiskDir("bytes");
  absl::StatusOr<std::unique_ptr<ConstantSpill>> spill = ConstantSpill::Open(dir);
  ASSERT_TRUE(spill.ok()) << spill.status();
  const int64_t n = int64_t{16} << 20;  // 64 MiB of f32
  Tensor original = Ramp(n);
  absl::StatusOr<Tensor> moved = (*spill)->Spill(original);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->shape(), original.shape());
  EXPECT_NE(moved->raw(), original.raw());
  EXPECT_TRUE(IsSpilled(moved->raw(), moved->byte_size()));
  EXPECT_FALSE(IsSpilled(original.raw(), original.byte_size()));
  EXPECT_EQ((*spill)->bytes_written(), static_cast<int64_t>(original.byte_size()));
  const int64_t heap = static_cast<int64_t>(original.byte_size());

  // Reading pages it in; releasing gives the pages back; reading again
  // faults in the same bytes from the file.
  const int64_t before_read = ResidentBytes();
  ASSERT_EQ(std::memcmp(moved->raw(), original.raw(), original.byte_size()), 0);
  const int64_t after_read = ResidentBytes();
  EXPECT_GT(after_read - before_read, heap * 9 / 10);
  const int64_t released = ReleaseResidentPages(moved->raw(), moved->byte_size());
  EXPECT_GT(released, heap - 4096 * 2);
  EXPECT_LE(released, heap);
  EXPECT_LT(ResidentBytes(), after_read - heap * 9 / 10);
  EXPECT_EQ(std::memcmp(moved->raw(), original.raw(), original.byte_size()), 0);

  // The file is unlinked: the directory stays empty while the data lives.
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

// A row read with ReadSpilled holds the mapping's bytes and maps none of its
// pages (a fault there maps the whole page-cache folio around it); the
// range keeps the file open after the spill itself is gone.
TEST(ConstantSpillTest, ReadingFromTheFileGivesTheMappingsBytesAndMapsNothing) {
  const std::string dir = DiskDir("pread");
  absl::StatusOr<std::unique_ptr<ConstantSpill>> spill = ConstantSpill::Open(dir);
  ASSERT_TRUE(spill.ok()) << spill.status();
  absl::StatusOr<Tensor> first = (*spill)->Spill(Ramp(1500));  // a page and a bit, so the next starts further on
  ASSERT_TRUE(first.ok()) << first.status();
  const Tensor original = Ramp(int64_t{4} << 20);  // 16 MiB
  absl::StatusOr<Tensor> moved = (*spill)->Spill(original);
  ASSERT_TRUE(moved.ok()) << moved.status();
  (*spill).reset();  // the mappings and their ranges outlive the spill

  const int64_t row = 3072;  // bytes
  const SpilledRange whole = SpilledRangeOf(moved->raw(), moved->byte_size());
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole.offset, 8192);  // after the first tensor's two pages
  const auto* bytes = static_cast<const char*>(moved->raw());
  const SpilledRange inner = SpilledRangeOf(bytes + 5 * row, 7 * row);
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner.offset, whole.offset + 5 * row);
  std::vector<char> got(row);
  for (int64_t r : {int64_t{0}, int64_t{1}, int64_t{777}, int64_t{4095}, int64_t{5460}}) {
    ASSERT_TRUE(ReadSpilled(whole, r * row, got.data(), row)) << r;
    EXPECT_EQ(std::memcmp(got.data(), static_cast<const char*>(original.raw()) + r * row, row), 0) << r;
  }
  ASSERT_TRUE(ReadSpilled(inner, row, got.data(), row));
  EXPECT_EQ(std::memcmp(got.data(), static_cast<const char*>(original.raw()) + 6 * row, row), 0);
  EXPECT_EQ(::shapeshift::testing::MappedPages(moved->raw(), moved->byte_size()), 0);
  EXPECT_FALSE(ReadSpilled(whole, static_cast<int64_t>(moved->byte_size()) + (int64_t{1} << 30), got.data(), row))
      << "a read past the file's end";

  // Not a spill, or not wholly one: no range.
  EXPECT_FALSE(SpilledRangeOf(original.raw(), original.byte_size()));
  EXPECT_FALSE(SpilledRangeOf(moved->raw(), moved->byte_size() + 1));
  EXPECT_FALSE(SpilledRangeOf(moved->raw(), 0));
  EXPECT_FALSE(ReadSpilled(SpilledRange{}, 0, got.data(), row));
  std::filesystem::remove_all(dir);
}

TEST(ConstantSpillTest, ReleasingMemoryOutsideASpillIsANoOp) {
  Tensor heap = Ramp(int64_t{1} << 20);
  Tensor copy = heap.Clone();
  EXPECT_EQ(ReleaseResidentPages(heap.raw(), heap.byte_size()), 0);
  EXPECT_EQ(std::memcmp(heap.raw(), copy.raw(), copy.byte_size()), 0);
  EXPECT_EQ(ReleaseResidentPages(nullptr, 0), 0);
}

TEST(ConstantSpillTest, RangesBeyondTheMappingAreNotReleased) {
  const std::string dir = DiskDir("range");
  absl::StatusOr<std::unique_ptr<ConstantSpill>> spill = ConstantSpill::Open(dir);
  ASSERT_TRUE(spill.ok()) << spill.status();
  absl::StatusOr<Tensor> moved = (*spill)->Spill(Ramp(int64_t{1} << 16));
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(ReleaseResidentPages(moved->raw(), moved->byte_size() + 4096 * 4), 0);
  EXPECT_FALSE(IsSpilled(moved->raw(), moved->byte_size() + 1));
  std::filesystem::remove_all(dir);
}

TEST(ConstantSpillTest, RefusesDirectoriesWhoseFileWouldBeMemory) {
  struct statfs fs;
  if (statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC) {
    absl::StatusOr<std::unique_ptr<ConstantSpill>> shm = ConstantSpill::Open("/dev/shm");
    ASSERT_FALSE(shm.ok());
    EXPECT_EQ(shm.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(shm.status().message().find("tmpfs"), std::string::npos) << shm.status();
  }
  // A path that is a regular file is no directory either.
  const std::string file = DiskDir("file");
  std::ofstream(file) << "x";
  absl::StatusOr<std::unique_ptr<ConstantSpill>> not_dir = ConstantSpill::Open(file);
  ASSERT_FALSE(not_dir.ok());
  EXPECT_NE(not_dir.status().message().find(file), std::string::npos) << not_dir.status();
  std::filesystem::remove(file);
}

TEST(ConstantSpillTest, SpillLargeConstantsMovesOnlyTheLargeOnesAndKeepsResults) {
  Graph g;
  ShapeEnv env;
  GraphBuilder b(g, env);
  Value* x = b.Input("x", TensorType(DType::kF32, {SymExpr(int64_t{1} << 18)}));
  Value* big = b.Constant("big", Ramp(int64_t{1} << 18));
  Value* small = b.Constant("small", Tensor::Scalar(2.0f));
  absl::StatusOr<Value*> add = b.Op("Add", {x, big});
  ASSERT_TRUE(add.ok()) << add.status();
  absl::StatusOr<Value*> mul = b.Op("Mul", {*add, small});
  ASSERT_TRUE(mul.ok()) << mul.status();
  b.Output(*mul);
  std::vector<Tensor> inputs = {Ramp(int64_t{1} << 18)};
  absl::StatusOr<std::vector<Tensor>> before = Interpret(g, inputs);
  ASSERT_TRUE(before.ok()) << before.status();

  const std::string dir = DiskDir("graph");
  absl::StatusOr<std::unique_ptr<ConstantSpill>> spill = ConstantSpill::Open(dir);
  ASSERT_TRUE(spill.ok()) << spill.status();
  absl::StatusOr<SpillStats> stats = SpillLargeConstants(g, **spill, 4096);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->constants, 1);
  EXPECT_EQ(stats->moved, 1);
  EXPECT_EQ(stats->bytes, int64_t{4} << 18);
  EXPECT_TRUE(IsSpilled(big->constant()->raw(), big->constant()->byte_size()));
  EXPECT_FALSE(IsSpilled(small->constant()->raw(), small->constant()->byte_size()));
  // Spilling again moves nothing: those bytes are already in a file.
  absl::StatusOr<SpillStats> again = SpillLargeConstants(g, **spill, 4096);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->constants, 1);
  EXPECT_EQ(again->moved, 0);

  ReleaseResidentPages(big->constant()->raw(), big->constant()->byte_size());
  absl::StatusOr<std::vector<Tensor>> after = Interpret(g, inputs);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ(std::memcmp((*after)[0].raw(), (*before)[0].raw(), (*before)[0].byte_size()), 0);
  std::filesystem::remove_all(dir);
}

// A MatMul model whose weight `w` (k x 4) is raw bytes in the message or,
// with `external`, in DIR/w.bin; `b` (4 floats) stays small.
std::string MatMulModel(const std::string& dir, int64_t k, bool external, std::vector<float>* weights) {
  weights->resize(static_cast<size_t>(k * 4));
  for (size_t i = 0; i < weights->size(); ++i) (*weights)[i] = static_cast<float>(i % 251) - 125.0f;
  testing::OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"n", std::to_string(k)});
  const std::string bytes(reinterpret_cast<const char*>(weights->data()), weights->size() * sizeof(float));
  if (external) {
    std::ofstream(std::filesystem::path(dir) / "w.bin", std::ios::binary) << bytes;
    m.ExternalFloatInitializer("w", {k, 4}, "w.bin");
  } else {
    onnx::TensorProto* w = m.model().mutable_graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(k);
    w->add_dims(4);
    w->set_raw_data(bytes);
  }
  m.FloatInitializer("b", {4}, {1, 2, 3, 4});
  m.Node("MatMul", {"x", "w"}, {"xw"});
  m.Node("Add", {"xw", "b"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {"n", "4"});
  const std::string path = (std::filesystem::path(dir) / "model.onnx").string();
  std::ofstream(path, std::ios::binary) << m.Bytes();
  return path;
}

TEST(ConstantSpillTest, TheImporterWritesLargeInitializersStraightToTheSpill) {
  for (bool external : {false, true}) {
    const std::string dir = DiskDir(external ? "import_external" : "import_raw");
    std::filesystem::create_directories(dir);
    const int64_t k = int64_t{1} << 16;  // w: 1 MiB
    std::vector<float> weights;
    const std::string path = MatMulModel(dir, k, external, &weights);
    absl::StatusOr<std::unique_ptr<ConstantSpill>> spill = ConstantSpill::Open((std::filesystem::path(dir) / "spill").string());
    ASSERT_TRUE(spill.ok()) << spill.status();
    ImportOptions options;
    options.spill = spill->get();
    absl::StatusOr<ImportedModel> spilled = ImportOnnxFile(path, options);
    ASSERT_TRUE(spilled.ok()) << spilled.status();
    absl::StatusOr<ImportedModel> in_memory = ImportOnnxFile(path);
    ASSERT_TRUE(in_memory.ok()) << in_memory.status();
    const Tensor* w = spilled->graph->FindValue("w")->constant();
    const Tensor* b = spilled->graph->FindValue("b")->constant();
    ASSERT_NE(w, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(IsSpilled(w->raw(), w->byte_size())) << (external ? "external" : "raw");
    EXPECT_FALSE(IsSpilled(b->raw(), b->byte_size()));
    EXPECT_FALSE(IsSpilled(in_memory->graph->FindValue("w")->constant()->raw(), w->byte_size()));
    EXPECT_EQ((*spill)->bytes_written(), static_cast<int64_t>(w->byte_size()));
    ASSERT_EQ(w->byte_size(), weights.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(w->raw(), weights.data(), w->byte_size()), 0);
    std::vector<Tensor> inputs = {Ramp(3 * k)};
    absl::StatusOr<Tensor> x = inputs[0].Reshaped({3, k});
    ASSERT_TRUE(x.ok());
    inputs[0] = *x;
    absl::StatusOr<std::vector<Tensor>> a = Interpret(*spilled->graph, inputs);
    absl::StatusOr<std::vector<Tensor>> c = Interpret(*in_memory->graph, inputs);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(std::memcmp((*a)[0].raw(), (*c)[0].raw(), (*c)[0].byte_size()), 0);
    std::filesystem::remove_all(dir);
  }
}

TEST(ConstantSpillTest, AFailedWriteKeepsTheRestOfTheImportInMemoryWithANote) {
  const std::string dir = DiskDir("import_full");
  std::filesystem::create_directories(dir);
  const int64_t k = int64_t{1} << 16;  // w: 1 MiB
  std::vector<float> weights;
  const std::string path = MatMulModel(dir, k, /*external=*/false, &weights);
  // Room for less than w: the write fails as on a full disk.
  absl::StatusOr<std::unique_ptr<ConstantSpill>> spill =
      ConstantSpill::Open((std::filesystem::path(dir) / "spill").string(), int64_t{1} << 19);
  ASSERT_TRUE(spill.ok()) << spill.status();
  ImportOptions options;
  options.spill = spill->get();
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(path, options);
  ASSERT_TRUE(model.ok()) << model.status();
  const Tensor* w = model->graph->FindValue("w")->constant();
  EXPECT_FALSE(IsSpilled(w->raw(), w->byte_size()));
  EXPECT_EQ(std::memcmp(w->raw(), weights.data(), w->byte_size()), 0);
  ASSERT_FALSE(model->notes.empty());
  EXPECT_NE(model->notes.back().find("initializer 'w' on kept in memory"), std::string::npos) << model->notes.back();
  EXPECT_NE(model->notes.back().find("capacity"), std::string::npos) << model->notes.back();
  EXPECT_EQ((*spill)->bytes_written(), 0);
  std::filesystem::remove_all(dir);
}

// From a file (a model's external data): the bytes at the offset, copied by
// the kernel; a file that ends early is DATA_LOSS and writes nothing more.
TEST(ConstantSpillTest, SpillFromFileCopiesTheRangeAndRefusesAShortFile) {
  const std::string dir = DiskDir("from_file");
  std::filesystem::create_directories(dir);
  const std::string source = (std::filesystem::path(dir) / "data.bin").string();
  std::vector<float> data(3 << 18);  // 3 MiB
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5f;
  std::ofstream(source, std::ios::binary).write(reinterpret_cast<const char*>(data.data()),
                                                 static_cast<std::streamsize>(data.size() * sizeof(float)));
  absl::StatusOr<std::unique_ptr<ConstantSpill>> spill = ConstantSpill::Open((std::filesystem::path(dir) / "spill").string());
  ASSERT_TRUE(spill.ok()) << spill.status();
  const int fd = open(source.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const int64_t first = 1 << 18;  // elements skipped: the range starts 1 MiB in
  absl::StatusOr<Tensor> t = (*spill)->SpillFromFile(DType::kF32, {1 << 18, 2}, fd, first * 4, size_t{2} << 20);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(IsSpilled(t->raw(), t->byte_size()));
  EXPECT_EQ(std::memcmp(t->raw(), data.data() + first, t->byte_size()), 0);
  // 4 MiB from 1 MiB in, of a 3 MiB file: refused, and counted as nothing.
  absl::StatusOr<Tensor> past = (*spill)->SpillFromFile(DType::kF32, {1 << 18, 4}, fd, first * 4, size_t{4} << 20);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.status().code(), absl::StatusCode::kDataLoss) << past.status();
  EXPECT_EQ((*spill)->bytes_written(), int64_t{2} << 20);
  close(fd);
  std::filesystem::remove_all(dir);
}

TEST(ConstantSpillTest, SpillBytesRefusesBytesThatAreNotTheShapes) {
  const std::string dir = DiskDir("bad_bytes");
  absl::StatusOr<std::unique_ptr<ConstantSpill>> spill = ConstantSpill::Open(dir);
  ASSERT_TRUE(spill.ok()) << spill.status();
  std::vector<float> v(10);
  absl::StatusOr<Tensor> t = (*spill)->SpillBytes(DType::kF32, {3, 4}, v.data(), v.size() * sizeof(float));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Tensor> huge =
      (*spill)->SpillBytes(DType::kF32, {int64_t{1} << 40, int64_t{1} << 40}, v.data(), v.size() * sizeof(float));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ((*spill)->bytes_written(), 0);
  std::filesystem::remove_all(dir);
}

TEST(ConstantSpillTest, ReplaceConstantRefusesAnotherShape) {
  Graph g;
  Value* c = g.AddConstant("c", Ramp(8));
  absl::Status s = g.ReplaceConstant(c, Ramp(9));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'c'"), std::string::npos) << s;
}

}  // namespace
}  // namespace shapeshift
