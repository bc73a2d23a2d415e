#include "tools/model_loader.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "examples/models/bert.h"
#include "examples/models/gpt2.h"
#include "examples/models/model_builder.h"

namespace shapeshift::tools {
namespace {

constexpr char kBuiltinPrefix[] = "builtin:";

// Moves each override into the field of the same name; an unknown name is an
// error listing the known ones.
absl::Status ApplyOverrides(const std::string& model, const std::map<std::string, DimRange>& dims,
                            const std::map<std::string, DimRange*>& fields) {
  for (const auto& [name, range] : dims) {
    auto it = fields.find(name);
    if (it == fields.end()) {
      std::vector<std::string> known;
      for (const auto& [known_name, field] : fields) known.push_back(known_name);
      return absl::InvalidArgumentError(absl::StrCat("--dim ", name, ": ", model, " has no dim '", name,
                                                     "' (its dims: ", absl::StrJoin(known, ", "), ")"));
    }
    *it->second = range;
  }
  return absl::OkStatus();
}

absl::StatusOr<ImportedModel> LoadBuiltin(const std::string& arg, const std::string& name,
                                          const std::map<std::string, DimRange>& dims) {
  if (name == "bert" || name == "bert-base") {
    examples::BertConfig config;
    if (name == "bert-base") {  // BERT-base's sizes (110M parameters), random weights
      config.layers = 12;
      config.hidden = 768;
      config.heads = 12;
      config.intermediate = 3072;
      config.vocab = 30522;
    }
    if (absl::Status s = ApplyOverrides(arg, dims, {{"batch", &config.batch}, {"seq", &config.seq}}); !s.ok()) {
      return s;
    }
    return examples::BuildBert(config);
  }
  if (name == "gpt2" || name == "gpt2-kv" || name == "gpt2-base-kv") {
    examples::Gpt2Config config;
    config.kv_cache = name != "gpt2";
    if (name == "gpt2-base-kv") {  // GPT-2 small's sizes (124M parameters), random weights
      config.layers = 12;
      config.hidden = 768;
      config.heads = 12;
      config.vocab = 50257;
    }
    std::map<std::string, DimRange*> fields = {{"batch", &config.batch}, {"seq", &config.seq}};
    if (config.kv_cache) fields["past"] = &config.past;
    if (absl::Status s = ApplyOverrides(arg, dims, fields); !s.ok()) return s;
    return examples::BuildGpt2(config);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown built-in model '", arg, "' (known: builtin:",
                                                 absl::StrJoin(BuiltinModelNames(), ", builtin:"), ")"));
}

absl::StatusOr<ImportedModel> LoadOnnx(const std::string& path, const std::map<std::string, DimRange>& dims,
                                       ConstantSpill* spill) {
  ImportOptions options;  // the importer adds the dims recorded in the model's metadata
  options.dim_ranges = dims;
  options.spill = spill;
  return ImportOnnxFile(path, options);
}

bool LooksLikeMask(const std::string& name) {
  return absl::StrContains(absl::AsciiStrToLower(name), "mask");
}

// The first dim of the constant table `v` indexes through a Gather, if any
// — directly or through ops that only change the ids' shape or integer type
// (the dynamo exporter reshapes `input_ids` before the embedding's Gather).
std::optional<int64_t> GatherTableRows(const Value& v, int depth = 0) {
  for (const Use& use : v.uses()) {
    const Node& node = *use.user;
    const std::string& op = node.op_type();
    if (op == "Gather" && use.input_index == 1) {
      const Tensor* table = node.input(0)->constant();
      if (table != nullptr && table->rank() >= 1) return table->shape()[0];
    }
    const bool reshapes = op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" || op == "Flatten" ||
                          op == "Identity" || (op == "Cast" && !IsFloat(node.output(0)->type().dtype));
    if (reshapes && use.input_index == 0 && depth < 4) {
      if (std::optional<int64_t> rows = GatherTableRows(*node.output(0), depth + 1)) return rows;
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::vector<int64_t>> ParseShape(const std::string& text, const std::string& flag) {
  std::vector<int64_t> shape;
  if (text.empty() || text == "[]") return shape;  // a scalar
  std::string trimmed(absl::StripSuffix(absl::StripPrefix(text, "["), "]"));
  for (absl::string_view part : absl::StrSplit(trimmed, absl::ByAnyChar("x,"))) {
    int64_t d = 0;
    if (!absl::SimpleAtoi(part, &d) || d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": '", text, "' is not a shape like 2x128"));
    }
    shape.push_back(d);
  }
  return shape;
}

// Binds `symbol` = `value`, or checks agreement with an earlier binding.
absl::Status Bind(const std::string& symbol, int64_t value, const std::string& flag, Assignment& dims,
                  std::map<std::string, std::string>& bound_by) {
  auto [it, inserted] = dims.emplace(symbol, value);
  if (!inserted && it->second != value) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " sets ", symbol, " = ", value, " but ",
                                                   bound_by[symbol], " set it to ", it->second));
  }
  bound_by.emplace(symbol, flag);
  return absl::OkStatus();
}

// A dim given by --input that is an expression of symbols (`past + seq`):
// checked once every symbol is bound.
struct DerivedDim {
  SymExpr dim;
  int64_t given = 0;
  std::string flag;
};

absl::Status BindInputShape(const std::vector<InputRecipe>& recipes, const std::string& input_flag,
                            const std::string& flag_value, Assignment& dims,
                            std::map<std::string, std::string>& bound_by, std::vector<DerivedDim>& derived) {
  const std::string flag = absl::StrCat(input_flag, " ", flag_value);
  std::vector<std::string> name_shape = absl::StrSplit(flag_value, absl::MaxSplits('=', 1));
  if (name_shape.size() != 2) return absl::InvalidArgumentError(absl::StrCat(flag, ": expected NAME=SHAPE"));
  const InputRecipe* recipe = nullptr;
  std::vector<std::string> names;
  for (const InputRecipe& r : recipes) {
    names.push_back(r.name);
    if (r.name == name_shape[0]) recipe = &r;
  }
  if (recipe == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": the model has no input '", name_shape[0],
                                                   "' (its inputs: ", absl::StrJoin(names, ", "), ")"));
  }
  absl::StatusOr<std::vector<int64_t>> shape = ParseShape(name_shape[1], flag);
  if (!shape.ok()) return shape.status();
  if (static_cast<int64_t>(shape->size()) != recipe->type.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": input '", recipe->name, "' is ",
                                                   recipe->type.ToString(), " (rank ", recipe->type.rank(), ")"));
  }
  for (size_t i = 0; i < shape->size(); ++i) {
    SymExpr dim = recipe->type.shape[i];
    if (std::optional<int64_t> c = dim.AsConst()) {
      if (*c != (*shape)[i]) {
        return absl::InvalidArgumentError(absl::StrCat(flag, ": dim ", i, " of '", recipe->name, "' is fixed at ", *c));
      }
    } else if (dim.IsSymbol()) {
      if (absl::Status s = Bind(dim.symbol_name(), (*shape)[i], flag, dims, bound_by); !s.ok()) return s;
    } else {
      derived.push_back({dim, (*shape)[i], flag});
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> BuiltinModelNames() { return {"bert", "gpt2", "gpt2-kv", "bert-base", "gpt2-base-kv"}; }

absl::StatusOr<std::map<std::string, DimRange>> ParseDimFlags(const std::vector<std::string>& flags) {
  ImportOptions options;
  for (const std::string& flag : flags) {
    if (absl::Status s = ParseDimRangeFlag(flag, &options); !s.ok()) return s;
  }
  return options.dim_ranges;
}

absl::StatusOr<ImportedModel> LoadModel(const std::string& model_arg, const std::map<std::string, DimRange>& dims,
                                        ConstantSpill* spill) {
  if (absl::StartsWith(model_arg, kBuiltinPrefix)) {
    return LoadBuiltin(model_arg, model_arg.substr(sizeof(kBuiltinPrefix) - 1), dims);
  }
  return LoadOnnx(model_arg, dims, spill);
}

std::vector<InputRecipe> InputRecipes(const Graph& graph) {
  std::vector<InputRecipe> recipes;
  for (const Value* v : graph.inputs()) {
    InputRecipe r;
    r.name = v->name();
    r.type = v->type();
    if (IsFloat(v->type().dtype)) {
      r.kind = InputRecipe::Kind::kFloats;
    } else if (LooksLikeMask(v->name()) || v->type().dtype == DType::kBool) {
      r.kind = InputRecipe::Kind::kMask;
    } else if (std::optional<int64_t> rows = GatherTableRows(*v)) {
      r.kind = InputRecipe::Kind::kTokenIds;
      r.limit = *rows;
    } else {
      r.kind = InputRecipe::Kind::kIntegers;
    }
    recipes.push_back(std::move(r));
  }
  return recipes;
}

absl::StatusOr<Assignment> BindRequestDims(const std::vector<InputRecipe>& recipes, const ShapeEnv& env,
                                           const std::vector<std::string>& input_shapes,
                                           const std::vector<std::string>& bindings, const std::string& input_flag) {
  Assignment dims;
  std::map<std::string, std::string> bound_by;
  for (const std::string& flag : bindings) {
    std::vector<std::string> parts = absl::StrSplit(flag, absl::MaxSplits('=', 1));
    int64_t value = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &value)) {
      return absl::InvalidArgumentError(absl::StrCat("--bind ", flag, ": expected SYMBOL=N"));
    }
    if (!env.HasSymbol(parts[0])) {
      std::vector<std::string> known;
      for (const SymbolInfo& s : env.symbols()) known.push_back(s.name);
      return absl::InvalidArgumentError(absl::StrCat("--bind ", flag, ": the model has no dim '", parts[0],
                                                     "' (its dims: ", absl::StrJoin(known, ", "), ")"));
    }
    if (absl::Status s = Bind(parts[0], value, "--bind " + flag, dims, bound_by); !s.ok()) return s;
  }
  std::vector<DerivedDim> derived;
  for (const std::string& flag : input_shapes) {
    if (absl::Status s = BindInputShape(recipes, input_flag, flag, dims, bound_by, derived); !s.ok()) return s;
  }
  for (const SymbolInfo& s : env.symbols()) {
    auto [it, unbound] = dims.emplace(s.name, s.min);
    if (!unbound && (it->second < s.min || it->second > s.max)) {
      return absl::OutOfRangeError(absl::StrCat(bound_by[s.name], ": ", s.name, " = ", it->second,
                                                " is outside the declared range ", s.min, "..", s.max,
                                                RangeNoteSuffix(s)));
    }
  }
  for (const DomainConstraint& c : env.domain_constraints()) {
    absl::StatusOr<bool> holds = c.predicate.Evaluate(dims);
    if (!holds.ok() || !*holds) return RelationRefusal(c, dims);
  }
  for (const DerivedDim& d : derived) {
    absl::StatusOr<int64_t> value = d.dim.Evaluate(dims);
    if (!value.ok() || *value != d.given) {
      return absl::InvalidArgumentError(absl::StrCat(d.flag, ": a dim of ", d.given, " where the model needs ",
                                                     d.dim.ToString(), value.ok() ? absl::StrCat(" = ", *value) : ""));
    }
  }
  return dims;
}

absl::StatusOr<std::vector<Tensor>> MakeInputs(const std::vector<InputRecipe>& recipes, const Assignment& dims,
                                               uint64_t seed) {
  examples::WeightGenerator rng(seed);
  std::vector<Tensor> inputs;
  for (const InputRecipe& r : recipes) {
    absl::StatusOr<std::vector<int64_t>> shape = r.type.Evaluate(dims);
    if (!shape.ok()) return absl::InvalidArgumentError(absl::StrCat("input '", r.name, "': ", shape.status().message()));
    for (int64_t d : *shape) {
      if (d < 0) return absl::InvalidArgumentError(absl::StrCat("input '", r.name, "' would have a negative dim"));
    }
    absl::StatusOr<Tensor> t = Tensor::Zeros(r.type.dtype, *shape);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("input '", r.name, "': ", t.status().message()));
    const bool floats = r.kind == InputRecipe::Kind::kFloats;
    if (!floats && r.kind != InputRecipe::Kind::kMask && r.limit < 1 && t->num_elements() > 0) {
      return absl::InvalidArgumentError(absl::StrCat("input '", r.name, "' indexes an empty table"));
    }
    if ((floats && r.type.dtype != DType::kF32) ||
        (!floats && r.type.dtype != DType::kI64 && r.type.dtype != DType::kI32 && r.type.dtype != DType::kBool)) {
      return absl::UnimplementedError(
          absl::StrCat("input '", r.name, "': random ", DTypeName(r.type.dtype), " inputs are not supported"));
    }
    for (int64_t i = 0; i < t->num_elements(); ++i) {
      if (floats) {
        t->mutable_data<float>()[i] = rng.Normal(1.0f);
        continue;
      }
      int64_t value = r.kind == InputRecipe::Kind::kMask ? 1 : rng.UniformInt(0, r.limit - 1);
      if (r.type.dtype == DType::kI64) {
        t->mutable_data<int64_t>()[i] = value;
      } else if (r.type.dtype == DType::kI32) {
        t->mutable_data<int32_t>()[i] = static_cast<int32_t>(value);
      } else {
        t->mutable_data<bool>()[i] = value != 0;
      }
    }
    inputs.push_back(*std::move(t));
  }
  return inputs;
}

}  // namespace shapeshift::tools
