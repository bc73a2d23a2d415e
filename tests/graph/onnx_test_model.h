// Test helper: builds small ONNX models with the ONNX protobuf API, so
// importer, interpreter and CLI tests state their models inline.
#ifndef SHAPESHIFT_TESTS_GRAPH_ONNX_TEST_MODEL_H_
#define SHAPESHIFT_TESTS_GRAPH_ONNX_TEST_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace shapeshift::testing {

class OnnxTestModel {
 public:
  explicit OnnxTestModel(int opset = 17) {
    model_.set_ir_version(8);
    model_.set_producer_name("shapeshift-test");
    onnx::OperatorSetIdProto* id = model_.add_opset_import();
    id->set_domain("");
    id->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  // Each dim: an integer literal → dim_value, "" → anonymous dynamic dim,
  // anything else → dim_param name.
  OnnxTestModel& Input(const std::string& name, int elem_type, const std::vector<std::string>& dims) {
    FillValueInfo(model_.mutable_graph()->add_input(), name, elem_type, dims);
    return *this;
  }
  // The ONNX checker requires a shape on graph outputs; "" dims leave it open.
  OnnxTestModel& Output(const std::string& name, int elem_type, const std::vector<std::string>& dims) {
    FillValueInfo(model_.mutable_graph()->add_output(), name, elem_type, dims);
    return *this;
  }

  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }

  OnnxTestModel& FloatInitializer(const std::string& name, const std::vector<int64_t>& dims,
                                  const std::vector<float>& values) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  // An f32 [rows, cols] initializer stored as raw_data (as exporters write
  // weights): first, first + 0.25, first + 0.5, ...
  OnnxTestModel& RawFloatInitializer(const std::string& name, int64_t rows, int64_t cols, float first) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(rows);
    t->add_dims(cols);
    std::vector<float> values(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < values.size(); ++i) values[i] = first + static_cast<float>(i) * 0.25f;
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
    return *this;
  }
  // An f32 initializer whose bytes live in the external data file
  // `location` (relative to the model's directory; the caller writes it).
  OnnxTestModel& ExternalFloatInitializer(const std::string& name, const std::vector<int64_t>& dims,
                                          const std::string& location) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    onnx::StringStringEntryProto* entry = t->add_external_data();
    entry->set_key("location");
    entry->set_value(location);
    return *this;
  }
  OnnxTestModel& IntInitializer(const std::string& name, const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& values) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }

  static void AttrInt(onnx::NodeProto& n, const std::string& name, int64_t v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void AttrInts(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void AttrFloat(onnx::NodeProto& n, const std::string& name, float v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void AttrIntTensor(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& values) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::TENSOR);
    onnx::TensorProto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
  }

  onnx::ModelProto& model() { return model_; }
  std::string Bytes() const { return model_.SerializeAsString(); }

 private:
  static void FillValueInfo(onnx::ValueInfoProto* vi, const std::string& name, int elem_type,
                            const std::vector<std::string>& dims) {
    vi->set_name(name);
    onnx::TypeProto::Tensor* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    onnx::TensorShapeProto* shape = tt->mutable_shape();
    for (const std::string& d : dims) {
      onnx::TensorShapeProto::Dimension* dim = shape->add_dim();
      if (d.empty()) continue;
      if (d.find_first_not_of("0123456789") == std::string::npos) {
        dim->set_dim_value(std::stoll(d));
      } else {
        dim->set_dim_param(d);
      }
    }
  }

  onnx::ModelProto model_;
};

// The Shape→Gather→Unsqueeze→Concat→Reshape chain exporters emit for
// attention heads: x f32[batch, seq, 768] reshaped to [batch, seq, 12, 64].
inline OnnxTestModel AttentionReshapeModel(int opset = 14) {
  OnnxTestModel m(opset);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", "seq", "768"});
  m.IntInitializer("i0", {}, {0}).IntInitializer("i1", {}, {1});
  m.IntInitializer("heads", {1}, {12}).IntInitializer("head_dim", {1}, {64});
  m.Node("Shape", {"x"}, {"shape"}, "shape");
  m.Node("Gather", {"shape", "i0"}, {"b"}, "gather_b");
  m.Node("Gather", {"shape", "i1"}, {"s"}, "gather_s");
  bool axes_input = opset >= 13;
  if (axes_input) m.IntInitializer("axes0", {1}, {0});
  auto& ub = m.Node("Unsqueeze", axes_input ? std::vector<std::string>{"b", "axes0"} : std::vector<std::string>{"b"},
                    {"b1"}, "unsq_b");
  auto& us = m.Node("Unsqueeze", axes_input ? std::vector<std::string>{"s", "axes0"} : std::vector<std::string>{"s"},
                    {"s1"}, "unsq_s");
  if (!axes_input) {
    OnnxTestModel::AttrInts(ub, "axes", {0});
    OnnxTestModel::AttrInts(us, "axes", {0});
  }
  auto& cat = m.Node("Concat", {"b1", "s1", "heads", "head_dim"}, {"target"}, "concat");
  OnnxTestModel::AttrInt(cat, "axis", 0);
  m.Node("Reshape", {"x", "target"}, {"y"}, "reshape");
  m.Output("y", onnx::TensorProto::FLOAT, {"", "", "", ""});
  return m;
}

// x[n, 16] · w[16, 8] + b[1, 8], · scale, · v[8, 4]: raw weights of 512,
// 32 and 128 bytes, a typed-field initializer between them, model metadata
// and a graph doc string after the initializers — for the model-file rewrite
// (graph/onnx/weights_left_in_file.h), which must keep every byte around them.
inline OnnxTestModel RawWeightsModel() {
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"n", "16"});
  m.RawFloatInitializer("w", 16, 8, 0.5f).RawFloatInitializer("b", 1, 8, -1.0f);
  m.FloatInitializer("scale", {1}, {2.0f});
  m.RawFloatInitializer("v", 8, 4, 3.0f);
  m.Node("MatMul", {"x", "w"}, {"xw"});
  m.Node("Add", {"xw", "b"}, {"h"});
  m.Node("Mul", {"h", "scale"}, {"hs"});
  m.Node("MatMul", {"hs", "v"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {"n", "4"});
  onnx::StringStringEntryProto* meta = m.model().add_metadata_props();
  meta->set_key("note");
  meta->set_value("kept");
  m.model().mutable_graph()->set_doc_string("a graph doc string after the initializers");
  return m;
}

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_GRAPH_ONNX_TEST_MODEL_H_
