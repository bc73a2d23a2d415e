#include "codegen/cpu/cpu_backend.h"

#include <time.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "codegen/cpu/host_target.h"
#include "codegen/cpu/isa_limit.h"
#include "codegen/cpu/llvm_lowering.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/MC/SubtargetFeature.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

namespace shapeshift::codegen::cpu {
namespace {

std::string ToString(llvm::Error error) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << error;
  return os.str();
}

void InitializeLlvmOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

int HostVectorWidth(const llvm::StringMap<bool>& features) {
  auto has = [&](const char* f) {
    auto it = features.find(f);
    return it != features.end() && it->second;
  };
  if (has("avx512f")) return 16;
  if (has("avx")) return 8;
  return 4;
}

// Kernel names become part of the symbol, for readable profiles; `tag`
// (a counter or the key digest) keeps symbols distinct in profiles.
std::string SymbolFor(const std::string& name, absl::string_view tag) {
  std::string symbol = absl::StrCat("shapeshift_k", tag, "_");
  for (char c : name) symbol.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return symbol;
}

// CPU time of the calling thread: compile cost without the noise of other
// processes sharing the cores (the JIT compiles on the calling thread).
double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// Every f32 constant in full precision, in program order: the printer
// rounds them for humans, and two kernels differing only in a constant's
// last bits must not share an object.
void AppendExactConstants(const Value& value, std::string* out) {
  for (const Value* node : PostOrder(value)) {  // a DAG: each node once
    if ((*node)->kind == ValueKind::kConst && (*node)->type == ScalarType::kF32) {
      absl::StrAppend(out, " ", absl::StrFormat("%a", (*node)->f_value));
    }
  }
}

void AppendExactConstants(const std::vector<Stmt>& body, std::string* out) {
  for (const Stmt& stmt : body) {
    AppendExactConstants(stmt.value, out);
    if (stmt.at) AppendExactConstants(stmt.at, out);  // a scatter's computed index
    AppendExactConstants(stmt.body, out);
  }
}

struct LinkedCode {
  KernelFn fn = nullptr;
  ExtentFn extent = nullptr;
};

}  // namespace

struct CpuBackend::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> target_machine;  // O3 cost model and object emission
  LoweringOptions lowering;
  absl::Mutex mu;  // serializes compiles (optimization and code generation share target_machine)
  std::atomic<int64_t> next_id{0};
  ObjectStore* store = nullptr;
  CpuBackendStats stats ABSL_GUARDED_BY(mu);

  // Lowers and optimizes; the module lives in `context`.
  absl::StatusOr<std::unique_ptr<llvm::Module>> BuildModule(const Kernel& kernel, const std::string& symbol,
                                                            llvm::LLVMContext& context) {
    if (absl::Status s = Verify(kernel); !s.ok()) return s;
    auto module = std::make_unique<llvm::Module>(symbol, context);
    module->setDataLayout(target_machine->createDataLayout());
    module->setTargetTriple(target_machine->getTargetTriple().str());
    if (absl::Status s = LowerKernel(kernel, lowering, symbol, module.get()); !s.ok()) return s;
    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyModule(*module, &os)) {
      return absl::InternalError(absl::StrCat("kernel '", kernel.name, "': generated invalid LLVM IR: ", os.str()));
    }
    Optimize(*module);
    return module;
  }

  void Optimize(llvm::Module& module) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder builder(target_machine.get());
    builder.registerModuleAnalyses(mam);
    builder.registerCGSCCAnalyses(cgam);
    builder.registerFunctionAnalyses(fam);
    builder.registerLoopAnalyses(lam);
    builder.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    passes.run(module, mam);
  }

  // Machine code for `module`, as a relocatable object file.
  absl::StatusOr<std::string> EmitObject(llvm::Module& module, const std::string& kernel_name) {
    llvm::SmallVector<char, 0> buffer;
    llvm::raw_svector_ostream os(buffer);
    llvm::legacy::PassManager codegen;
    if (target_machine->addPassesToEmitFile(codegen, os, nullptr, llvm::CGFT_ObjectFile)) {
      return absl::InternalError(absl::StrCat("kernel '", kernel_name, "': the host target cannot emit object files"));
    }
    codegen.run(module);
    return std::string(buffer.data(), buffer.size());
  }

  // Links `object` into a JITDylib of its own and finds its two entry points.
  absl::StatusOr<LinkedCode> Link(const std::string& object, const std::string& symbol,
                                  const std::string& kernel_name) {
    auto dylib = jit->createJITDylib(absl::StrCat("kernel", next_id++));
    if (!dylib) return absl::InternalError(absl::StrCat("kernel '", kernel_name, "': ", ToString(dylib.takeError())));
    dylib->addToLinkOrder(jit->getMainJITDylib());  // process symbols (libm) live there
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object, symbol);
    if (llvm::Error e = jit->addObjectFile(*dylib, std::move(buffer))) {
      return absl::InternalError(absl::StrCat("kernel '", kernel_name, "': JIT rejected the object: ", ToString(std::move(e))));
    }
    auto fn = jit->lookup(*dylib, symbol);
    if (!fn) return absl::InternalError(absl::StrCat("kernel '", kernel_name, "': ", ToString(fn.takeError())));
    auto extent = jit->lookup(*dylib, symbol + "_extent");
    if (!extent) return absl::InternalError(absl::StrCat("kernel '", kernel_name, "': ", ToString(extent.takeError())));
    return LinkedCode{reinterpret_cast<KernelFn>(fn->getAddress()), reinterpret_cast<ExtentFn>(extent->getAddress())};
  }

  // The stored object for `key`, linked; nullopt (counted, with the reason)
  // when the store has none or the record is unusable.
  std::optional<LinkedCode> LinkFromStore(const Kernel& kernel, const std::string& material, const std::string& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::optional<std::string> bytes = store->Get(key);
    if (!bytes) {
      ++stats.store_misses;
      return std::nullopt;
    }
    absl::Status problem;
    absl::StatusOr<ObjectRecord> record = DecodeObjectRecord(*bytes);
    if (!record.ok()) {
      problem = record.status();
    } else if (record->key_material != material) {
      problem = absl::DataLossError("the stored record was made for other key material");
    } else {
      absl::StatusOr<LinkedCode> code = Link(record->object, record->symbol, kernel.name);
      if (code.ok()) {
        ++stats.store_hits;
        return *code;
      }
      problem = code.status();
    }
    ++stats.store_misses;
    ++stats.store_rejects;
    stats.last_store_problem =
        absl::StrCat("kernel '", kernel.name, "': stored object ", key, " not used: ", problem.message());
    return std::nullopt;
  }

  // Lowers, optimizes and generates code; keeps the object in the store.
  absl::StatusOr<LinkedCode> CompileAndStore(const Kernel& kernel, const std::string& material,
                                             const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::string symbol = SymbolFor(kernel.name, key.substr(0, 16));
    auto context = std::make_unique<llvm::LLVMContext>();
    auto module = BuildModule(kernel, symbol, *context);
    if (!module.ok()) return module.status();
    absl::StatusOr<std::string> object = EmitObject(**module, kernel.name);
    if (!object.ok()) return object.status();
    ++stats.llvm_compiles;
    absl::StatusOr<LinkedCode> code = Link(*object, symbol, kernel.name);
    if (!code.ok() || store == nullptr) return code;
    if (absl::Status s = store->Put(key, EncodeObjectRecord({material, symbol, *std::move(object)})); !s.ok()) {
      ++stats.store_put_errors;
      stats.last_store_problem = absl::StrCat("kernel '", kernel.name, "': object not stored: ", s.message());
    }
    return code;
  }
};

CpuBackend::CpuBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CpuBackend::~CpuBackend() = default;

absl::StatusOr<std::unique_ptr<CpuBackend>> CpuBackend::Create(const CpuBackendOptions& options) {
  InitializeLlvmOnce();
  auto impl = std::make_unique<Impl>();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) return absl::InternalError("cannot detect the host CPU: " + ToString(builder.takeError()));
  if (absl::StatusOr<IsaLimit> limit = ProcessIsaLimit(); !limit.ok()) return limit.status();
  // The host's features with the process's ISA limit applied: one string
  // (host_target.h) for the JIT, the vector width and the object keys.
  const HostTarget& host = DetectHostTarget();
  builder->getFeatures() = llvm::SubtargetFeatures(host.features);
  llvm::StringMap<bool> host_features;
  for (const std::string& f : builder->getFeatures().getFeatures()) {
    if (f.size() > 1) host_features[f.substr(1)] = f[0] == '+';
  }
  builder->setCPU(llvm::sys::getHostCPUName().str());
  builder->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  auto target_machine = builder->createTargetMachine();
  if (!target_machine) {
    return absl::InternalError("cannot create the host target machine: " + ToString(target_machine.takeError()));
  }
  impl->target_machine = std::move(*target_machine);
  impl->lowering.cpu = builder->getCPU();
  impl->lowering.features = builder->getFeatures().getString();
  impl->lowering.vector_width = options.vector_width > 0 ? options.vector_width : HostVectorWidth(host_features);
  auto avx512 = host_features.find("avx512f");
  impl->lowering.masked_tail = impl->lowering.vector_width > 1 && avx512 != host_features.end() && avx512->second &&
                               options.remainder != RemainderKind::kScalarLoop;

  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*builder)).create();
  if (!jit) return absl::InternalError("cannot create the LLVM JIT: " + ToString(jit.takeError()));
  impl->jit = std::move(*jit);
  // Lets generated code call libm if LLVM ever emits a library call.
  auto process_symbols = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      impl->jit->getDataLayout().getGlobalPrefix());
  if (!process_symbols) {
    return absl::InternalError("cannot expose process symbols to the JIT: " + ToString(process_symbols.takeError()));
  }
  impl->jit->getMainJITDylib().addGenerator(std::move(*process_symbols));
  impl->store = options.object_store;
  return std::unique_ptr<CpuBackend>(new CpuBackend(std::move(impl)));
}

absl::StatusOr<std::shared_ptr<const CompiledKernel>> CpuBackend::Compile(const Kernel& kernel) {
  auto start = std::chrono::steady_clock::now();
  absl::MutexLock lock(&impl_->mu);
  double cpu_start = ThreadCpuSeconds();
  if (absl::Status s = Verify(kernel); !s.ok()) return s;
  std::string material = KeyMaterial(kernel);
  std::string key = ObjectKeyDigest(material);
  auto compiled = std::make_shared<CompiledKernel>();
  std::optional<LinkedCode> code;
  if (impl_->store != nullptr) code = impl_->LinkFromStore(kernel, material, key);
  compiled->loaded_from_store = code.has_value();
  if (!code) {
    absl::StatusOr<LinkedCode> fresh = impl_->CompileAndStore(kernel, material, key);
    if (!fresh.ok()) return fresh.status();
    code = *fresh;
  }
  compiled->name = kernel.name;
  compiled->fn = code->fn;
  compiled->extent = code->extent;
  compiled->vector_width = impl_->lowering.vector_width;
  compiled->compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  compiled->compile_cpu_seconds = ThreadCpuSeconds() - cpu_start;
  return std::shared_ptr<const CompiledKernel>(std::move(compiled));
}

absl::StatusOr<std::string> CpuBackend::OptimizedIr(const Kernel& kernel) {
  absl::MutexLock lock(&impl_->mu);
  llvm::LLVMContext context;
  auto module = impl_->BuildModule(kernel, SymbolFor(kernel.name, absl::StrCat(impl_->next_id++)), context);
  if (!module.ok()) return module.status();
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os, nullptr);
  return os.str();
}

int CpuBackend::vector_width() const { return impl_->lowering.vector_width; }
const std::string& CpuBackend::cpu_name() const { return impl_->lowering.cpu; }

CpuBackendStats CpuBackend::stats() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->stats;
}

std::string CpuBackend::KeyMaterial(const Kernel& kernel) const {
  Kernel anonymous = kernel;
  anonymous.name = std::string("k");  // move-assigned: GCC 12 misreports a -Wrestrict on assign(const char*)
  for (size_t i = 0; i < anonymous.buffers.size(); ++i) anonymous.buffers[i].name = absl::StrCat("b", i);
  // Every LoweringOptions field decides the generated code, so every one is
  // key material: binding them all by name stops compiling when a field is
  // added, until it is added here too.
  const auto& [vector_width, masked_tail, cpu, features, streaming_store_min_bytes] = impl_->lowering;
  std::string material = absl::StrCat(
      "shapeshift kernel object key 1\ncompiler: ", CompilerIdentity(), "\nllvm: ", LLVM_VERSION_STRING,
      "\ntriple: ", impl_->target_machine->getTargetTriple().str(), "\ncpu: ", cpu, "\nfeatures: ", features,
      "\nvector width: ", vector_width, "\nremainder: ", masked_tail ? "masked vector" : "scalar loop",
      "\nstreaming stores from: ", streaming_store_min_bytes, " bytes\noptimization: O3\n", Print(anonymous),
      "f32 constants:");
  AppendExactConstants(anonymous.body, &material);
  return material;
}

}  // namespace shapeshift::codegen::cpu
