#include "codegen/cpu/cpu_backend.h"

#include <time.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "codegen/cpu/llvm_lowering.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Host.h"
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

// Kernel names become part of the symbol, for readable profiles.
std::string SymbolFor(const std::string& name, int64_t id) {
  std::string symbol = absl::StrCat("shapeshift_k", id, "_");
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

}  // namespace

struct CpuBackend::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> target_machine;  // for the O3 pipeline's cost model
  LoweringOptions lowering;
  absl::Mutex mu;  // serializes compiles (the pass pipeline shares target_machine)
  std::atomic<int64_t> next_id{0};

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
};

CpuBackend::CpuBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CpuBackend::~CpuBackend() = default;

absl::StatusOr<std::unique_ptr<CpuBackend>> CpuBackend::Create(const CpuBackendOptions& options) {
  InitializeLlvmOnce();
  auto impl = std::make_unique<Impl>();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) return absl::InternalError("cannot detect the host CPU: " + ToString(builder.takeError()));
  llvm::StringMap<bool> host_features;
  llvm::sys::getHostCPUFeatures(host_features);
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
  return std::unique_ptr<CpuBackend>(new CpuBackend(std::move(impl)));
}

absl::StatusOr<std::shared_ptr<const CompiledKernel>> CpuBackend::Compile(const Kernel& kernel) {
  auto start = std::chrono::steady_clock::now();
  absl::MutexLock lock(&impl_->mu);
  double cpu_start = ThreadCpuSeconds();
  std::string symbol = SymbolFor(kernel.name, impl_->next_id++);
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = impl_->BuildModule(kernel, symbol, *context);
  if (!module.ok()) return module.status();
  if (llvm::Error e = impl_->jit->addIRModule(
          llvm::orc::ThreadSafeModule(std::move(*module), std::move(context)))) {
    return absl::InternalError(absl::StrCat("kernel '", kernel.name, "': JIT rejected the module: ", ToString(std::move(e))));
  }
  auto fn = impl_->jit->lookup(symbol);
  if (!fn) return absl::InternalError(absl::StrCat("kernel '", kernel.name, "': ", ToString(fn.takeError())));
  auto extent = impl_->jit->lookup(symbol + "_extent");
  if (!extent) return absl::InternalError(absl::StrCat("kernel '", kernel.name, "': ", ToString(extent.takeError())));
  auto compiled = std::make_shared<CompiledKernel>();
  compiled->name = kernel.name;
  compiled->fn = reinterpret_cast<KernelFn>(fn->getAddress());
  compiled->extent = reinterpret_cast<ExtentFn>(extent->getAddress());
  compiled->vector_width = impl_->lowering.vector_width;
  compiled->compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  compiled->compile_cpu_seconds = ThreadCpuSeconds() - cpu_start;
  return std::shared_ptr<const CompiledKernel>(std::move(compiled));
}

absl::StatusOr<std::string> CpuBackend::OptimizedIr(const Kernel& kernel) {
  absl::MutexLock lock(&impl_->mu);
  llvm::LLVMContext context;
  auto module = impl_->BuildModule(kernel, SymbolFor(kernel.name, impl_->next_id++), context);
  if (!module.ok()) return module.status();
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os, nullptr);
  return os.str();
}

int CpuBackend::vector_width() const { return impl_->lowering.vector_width; }
const std::string& CpuBackend::cpu_name() const { return impl_->lowering.cpu; }

}  // namespace shapeshift::codegen::cpu
