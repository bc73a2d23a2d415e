#include "graph/tensor_proto.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"

namespace shapeshift {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TensorProtoTest, RawDataRoundTrip) {
  Tensor t = Tensor::FromVector<int64_t>(DType::kI64, {2, 2}, {1, -2, 3, 4});
  onnx::TensorProto proto;
  TensorToProto(t, "x", &proto);
  EXPECT_EQ(proto.name(), "x");
  absl::StatusOr<Tensor> back = TensorFromProto(proto, "", "x");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dtype(), DType::kI64);
  EXPECT_THAT(back->shape(), ElementsAre(2, 2));
  EXPECT_THAT(back->values<int64_t>(), ElementsAre(1, -2, 3, 4));
}

TEST(TensorProtoTest, TypedFieldsIncludingNarrowedInt32) {
  onnx::TensorProto f;
  f.set_data_type(onnx::TensorProto::FLOAT);
  f.add_dims(3);
  for (float v : {1.5f, -2.f, 0.f}) f.add_float_data(v);
  absl::StatusOr<Tensor> ft = TensorFromProto(f, "", "f");
  ASSERT_TRUE(ft.ok()) << ft.status();
  EXPECT_THAT(ft->values<float>(), ElementsAre(1.5f, -2.f, 0.f));

  onnx::TensorProto b;
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(2);
  b.add_int32_data(1);
  b.add_int32_data(0);
  absl::StatusOr<Tensor> bt = TensorFromProto(b, "", "b");
  ASSERT_TRUE(bt.ok()) << bt.status();
  EXPECT_THAT(bt->values<uint8_t>(), ElementsAre(1, 0));
}

TEST(TensorProtoTest, CountMismatchAndUnsupportedTypeNameTheTensor) {
  onnx::TensorProto f;
  f.set_data_type(onnx::TensorProto::FLOAT);
  f.add_dims(4);
  f.add_float_data(1.f);
  absl::StatusOr<Tensor> bad = TensorFromProto(f, "", "initializer 'w'");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("initializer 'w'"));

  onnx::TensorProto s;
  s.set_data_type(onnx::TensorProto::STRING);
  absl::StatusOr<Tensor> str = TensorFromProto(s, "", "s");
  ASSERT_FALSE(str.ok());
  EXPECT_EQ(str.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(str.status().message(), HasSubstr("STRING"));
}

TEST(TensorProtoTest, ExternalDataIsReadInsideBaseDirOnly) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "shapeshift_tensor_proto_test";
  std::filesystem::create_directories(dir);
  const float values[2] = {3.f, 4.f};
  {
    std::ofstream out(dir / "weights.bin", std::ios::binary);
    out.write("pad!", 4);
    out.write(reinterpret_cast<const char*>(values), sizeof values);
  }
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(2);
  p.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = p.add_external_data();
  loc->set_key("location");
  loc->set_value("weights.bin");
  auto* off = p.add_external_data();
  off->set_key("offset");
  off->set_value("4");
  absl::StatusOr<Tensor> t = TensorFromProto(p, dir.string(), "w");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->values<float>(), ElementsAre(3.f, 4.f));

  loc->set_value("../../etc/passwd");
  absl::StatusOr<Tensor> escape = TensorFromProto(p, dir.string(), "w");
  ASSERT_FALSE(escape.ok());
  EXPECT_THAT(escape.status().message(), HasSubstr("outside"));
  std::filesystem::remove_all(dir);
}

TEST(TensorProtoTest, ReadsBackendTestDataFile) {
  const std::string path = "/usr/share/libonnx-testdata/data/node/test_add/test_data_set_0/input_0.pb";
  std::string name;
  absl::StatusOr<Tensor> t = ReadTensorProtoFile(path, &name);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(name, "x");
  EXPECT_EQ(t->dtype(), DType::kF32);
  EXPECT_THAT(t->shape(), ElementsAre(3, 4, 5));
  EXPECT_FALSE(ReadTensorProtoFile("/nonexistent/input_0.pb").ok());
}

TEST(TensorProtoTest, HugeDeclaredShapeWithoutDataIsRejectedBeforeAllocating) {
  // f32[2^33] with no data: must be refused from the header alone (no 32 GiB allocation).
  onnx::TensorProto proto;
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.add_dims(int64_t{1} << 33);
  absl::StatusOr<Tensor> t = TensorFromProto(proto, "", "initializer 'w'");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("initializer 'w': has 0 values but its shape needs 8589934592"),
            std::string::npos)
      << t.status();
  proto.set_raw_data(std::string(16, '\0'));
  t = TensorFromProto(proto, "", "initializer 'w'");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("raw data has 16 bytes"), std::string::npos) << t.status();
  proto.clear_dims();
  proto.add_dims(-3);
  t = TensorFromProto(proto, "", "initializer 'w'");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("negative dimension -3"), std::string::npos) << t.status();
}

}  // namespace
}  // namespace shapeshift
