// Two MLIR execution engines in one process, one after the other, each
// given its own async runtime library: what a C++ (or Python) host does when
// it JIT-compiles several modules. scripts/corpus/symbol_binding.py builds this
// against one MLIR version's headers and libraries (19 and 22) and checks
// which runtime each engine's program ran on.
//
// Usage: two-engines PROGRAM.llvm.mlir UTILS.so RUNTIME1.so RUNTIME2.so
//   PROGRAM is lowered to the LLVM dialect; its `main` prints what it
//   computed. The first engine stays alive while the second runs (so both
//   runtimes are loaded, the first one first), then both are destroyed.
// Prints "engine N: " before each run; exit status 1 on any error.

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <memory>
#include <string>

static std::unique_ptr<mlir::ExecutionEngine>
runEngine(int n, mlir::MLIRContext &context, const char *program,
          const char *utils, const char *runtime) {
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(program, &context);
  if (!module) {
    std::fprintf(stderr, "two-engines: cannot parse %s\n", program);
    return nullptr;
  }
  llvm::StringRef libs[] = {utils, runtime};
  mlir::ExecutionEngineOptions options;
  options.sharedLibPaths = libs;
  // -O0 as the runners: lowers the coroutines the async lowering emits.
  auto transformer = mlir::makeOptimizingTransformer(0, 0, nullptr);
  options.transformer = transformer;
  auto engine = mlir::ExecutionEngine::create(*module, options);
  if (!engine) {
    llvm::errs() << "two-engines: engine " << n << ": "
                 << llvm::toString(engine.takeError()) << "\n";
    return nullptr;
  }
  std::printf("engine %d: ", n);
  std::fflush(stdout);
  if (llvm::Error error = (*engine)->invokePacked("main")) {
    llvm::errs() << "two-engines: engine " << n << ": "
                 << llvm::toString(std::move(error)) << "\n";
    return nullptr;
  }
  std::fflush(stdout);
  return std::move(*engine);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: two-engines PROGRAM.llvm.mlir UTILS.so "
                         "RUNTIME1.so RUNTIME2.so\n");
    return 2;
  }
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  mlir::DialectRegistry registry;
  registry.insert<mlir::LLVM::LLVMDialect>();
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::MLIRContext context(registry);
  auto first = runEngine(1, context, argv[1], argv[2], argv[3]);
  if (!first)
    return 1;
  auto second = runEngine(2, context, argv[1], argv[2], argv[4]);
  if (!second)
    return 1;
  second.reset();
  first.reset();
  return 0;
}
