#include "graph/onnx/weights_left_in_file.h"

#include "absl/strings/str_cat.h"
#include "onnx/onnx_pb.h"

namespace shapeshift {
namespace {

// The field numbers the rewrite reads or writes, from the generated code of
// onnx.proto itself.
constexpr uint32_t kModelGraph = onnx::ModelProto::kGraphFieldNumber;
constexpr uint32_t kGraphInitializer = onnx::GraphProto::kInitializerFieldNumber;
constexpr uint32_t kTensorName = onnx::TensorProto::kNameFieldNumber;
constexpr uint32_t kTensorRawData = onnx::TensorProto::kRawDataFieldNumber;
constexpr uint32_t kTensorExternalData = onnx::TensorProto::kExternalDataFieldNumber;
constexpr uint32_t kTensorDataLocation = onnx::TensorProto::kDataLocationFieldNumber;
constexpr uint32_t kEntryKey = onnx::StringStringEntryProto::kKeyFieldNumber;
constexpr uint32_t kEntryValue = onnx::StringStringEntryProto::kValueFieldNumber;
constexpr uint64_t kDataLocationExternal = onnx::TensorProto::EXTERNAL;

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// One field of a message: its bytes [begin, end) including the tag, and for
// a length-delimited field its payload.
struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  const char* begin = nullptr;
  const char* end = nullptr;
  std::string_view payload;
};

// Reads the fields of one message's bytes in order; stops (ok() false) at
// anything it does not understand: a truncated field, a group, field 0.
class FieldReader {
 public:
  explicit FieldReader(std::string_view bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  bool ok() const { return ok_; }
  bool Next(Field* field) {
    if (!ok_ || p_ == end_) return false;
    field->begin = p_;
    uint64_t tag = 0;
    if (!Varint(&tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX) return Fail();
    field->number = static_cast<uint32_t>(tag >> 3);
    field->wire = static_cast<uint32_t>(tag & 7);
    uint64_t value = 0;
    switch (field->wire) {
      case kVarint:
        if (!Varint(&value)) return Fail();
        break;
      case kFixed64:
        if (!Skip(8)) return Fail();
        break;
      case kFixed32:
        if (!Skip(4)) return Fail();
        break;
      case kLengthDelimited: {
        if (!Varint(&value) || value > static_cast<uint64_t>(end_ - p_)) return Fail();
        field->payload = std::string_view(p_, static_cast<size_t>(value));
        p_ += value;
        break;
      }
      default:  // groups (3, 4) and the undefined 6, 7
        return Fail();
    }
    field->end = p_;
    return true;
  }

 private:
  bool Fail() {
    ok_ = false;
    return false;
  }
  bool Varint(uint64_t* value) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64 && p_ != end_; shift += 7) {
      const auto byte = static_cast<unsigned char>(*p_++);
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *value = result;
        return true;
      }
    }
    return false;
  }
  bool Skip(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    p_ += n;
    return true;
  }
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void AppendTag(uint32_t number, WireType wire, std::string* out) {
  AppendVarint((static_cast<uint64_t>(number) << 3) | wire, out);
}

void AppendBytes(uint32_t number, std::string_view bytes, std::string* out) {
  AppendTag(number, kLengthDelimited, out);
  AppendVarint(bytes.size(), out);
  out->append(bytes);
}

void AppendEntry(std::string_view key, std::string_view value, std::string* out) {
  std::string entry;
  AppendBytes(kEntryKey, key, &entry);
  AppendBytes(kEntryValue, value, &entry);
  AppendBytes(kTensorExternalData, entry, out);
}

class Rewriter {
 public:
  Rewriter(std::string_view file, const std::string& location, size_t min_bytes)
      : file_(file), location_(location), min_bytes_(min_bytes) {}

  std::optional<ModelWithoutWeights> Run() {
    ModelWithoutWeights result;
    FieldReader model(file_);
    Field field;
    int graphs = 0;
    while (model.Next(&field)) {
      if (field.number == kModelGraph && field.wire == kLengthDelimited) {
        // Two `graph` fields merge when parsed; their initializer lists would
        // be numbered as one. Not worth understanding: decline.
        if (++graphs > 1) return std::nullopt;
        std::optional<std::string> graph = Graph(field.payload, &result.weights);
        if (!graph) return std::nullopt;
        AppendBytes(kModelGraph, *graph, &result.message);
      } else {
        result.message.append(field.begin, field.end);
      }
    }
    if (!model.ok() || result.weights.empty()) return std::nullopt;
    return result;
  }

 private:
  std::optional<std::string> Graph(std::string_view bytes, std::vector<WeightInFile>* weights) {
    std::string out;
    FieldReader graph(bytes);
    Field field;
    int index = 0;
    while (graph.Next(&field)) {
      if (field.number == kGraphInitializer && field.wire == kLengthDelimited) {
        if (!Initializer(field, index++, weights, &out)) return std::nullopt;
      } else {
        out.append(field.begin, field.end);
      }
    }
    if (!graph.ok()) return std::nullopt;
    return out;
  }

  // Appends the initializer to `out`, rewritten when its raw bytes are large.
  bool Initializer(const Field& initializer, int index, std::vector<WeightInFile>* weights, std::string* out) {
    FieldReader tensor(initializer.payload);
    Field field;
    std::string name;
    const Field* raw = nullptr;
    Field raw_field;
    bool external = false;
    int raw_fields = 0;
    while (tensor.Next(&field)) {
      if (field.number == kTensorName && field.wire == kLengthDelimited) name = std::string(field.payload);
      if (field.number == kTensorRawData) {
        if (field.wire != kLengthDelimited) return false;
        ++raw_fields;
        raw_field = field;
        raw = &raw_field;
      }
      if (field.number == kTensorExternalData || field.number == kTensorDataLocation) external = true;
    }
    if (!tensor.ok()) return false;
    // One raw_data field, nothing saying where else the data are: only then
    // is the rewritten tensor the same tensor.
    if (raw == nullptr || raw_fields != 1 || external || raw->payload.size() < min_bytes_) {
      out->append(initializer.begin, initializer.end);
      return true;
    }
    std::string rewritten;
    FieldReader again(initializer.payload);
    while (again.Next(&field)) {
      if (field.number != kTensorRawData) rewritten.append(field.begin, field.end);
    }
    const int64_t offset = raw->payload.data() - file_.data();
    const auto size = static_cast<int64_t>(raw->payload.size());
    AppendEntry("location", location_, &rewritten);
    AppendEntry("offset", absl::StrCat(offset), &rewritten);
    AppendEntry("length", absl::StrCat(size), &rewritten);
    AppendTag(kTensorDataLocation, kVarint, &rewritten);
    AppendVarint(kDataLocationExternal, &rewritten);
    AppendBytes(kGraphInitializer, rewritten, out);
    weights->push_back({index, std::move(name), offset, size});
    return true;
  }

  std::string_view file_;
  const std::string& location_;
  size_t min_bytes_;
};

}  // namespace

std::optional<ModelWithoutWeights> LeaveWeightsInFile(std::string_view file, const std::string& location,
                                                      size_t min_bytes) {
  return Rewriter(file, location, min_bytes).Run();
}

}  // namespace shapeshift
