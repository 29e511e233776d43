//===- plugin.cpp - MLIR's async-parallel-for, fixed, as a pass plugin ----===//
//
// The entry point of target/lowering-fixes/libmlir_async_lowering_fixes.so
// (lowering-fixes/build.sh, docs/lowering-bugs.md). The library holds its
// own copy of upstream's mlir/lib/Dialect/Async/Transforms/AsyncParallelFor.cpp
// (and PassDetail.cpp), taken from Debian's source package of the very MLIR
// it is built against, with lowering-fixes/<version>/*.patch applied; it
// is compiled with hidden visibility and linked with -Bsymbolic, so that
// createAsyncParallelForPass() below is that patched copy, never libMLIR's.
//
// It registers one pass, async-parallel-for-fixed, with the options of
// async-parallel-for (async-dispatch, num-workers, min-task-size, same
// defaults), which runs the patched pass on the module:
//
//   mlir-opt --load-pass-plugin=libmlir_async_lowering_fixes.so \
//     --pass-pipeline='builtin.module(async-parallel-for-fixed{num-workers=4})'
//
// A plugin is bound to the MLIR it was compiled against (C++ ABI, no
// stability across releases): loaded into another version's mlir-opt it
// says so in one line and refuses to register anything.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Async/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm-c/Core.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/raw_ostream.h"

#ifndef LOWERING_FIXES_PATCHES
#error "build.sh defines LOWERING_FIXES_PATCHES (the patches applied)"
#endif

using namespace mlir;

namespace {

struct AsyncParallelForFixedPass
    : public PassWrapper<AsyncParallelForFixedPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AsyncParallelForFixedPass)

  AsyncParallelForFixedPass() = default;
  AsyncParallelForFixedPass(const AsyncParallelForFixedPass &other)
      : PassWrapper(other) {}

  StringRef getArgument() const final { return "async-parallel-for-fixed"; }
  StringRef getDescription() const final {
    return "async-parallel-for of MLIR " LLVM_VERSION_STRING
           " with the patches of mlir-async-rs's lowering-fixes/ ("
           LOWERING_FIXES_PATCHES ")";
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, async::AsyncDialect,
                    func::FuncDialect, scf::SCFDialect>();
  }

  // The options of async-parallel-for (mlir/Dialect/Async/Passes.td), with
  // its defaults.
  Option<bool> asyncDispatch{
      *this, "async-dispatch",
      llvm::cl::desc("Dispatch async compute tasks using recursive work "
                     "splitting. If `false` async compute tasks will be "
                     "launched using simple for loop in the caller thread."),
      llvm::cl::init(true)};
  Option<int32_t> numWorkerThreads{
      *this, "num-workers",
      llvm::cl::desc("The number of available workers to execute async "
                     "operations. If `-1` the value will be retrieved from "
                     "the runtime."),
      llvm::cl::init(8)};
  Option<int32_t> minTaskSize{
      *this, "min-task-size",
      llvm::cl::desc("The minimum task size for sharding parallel operation."),
      llvm::cl::init(1000)};

  void runOnOperation() override {
    // The patched copy compiled into this library (hidden, bound locally).
    OpPassManager pm(ModuleOp::getOperationName());
#if LLVM_VERSION_MAJOR >= 20
    // Since MLIR 20 the pass takes its options as a struct.
    AsyncParallelForPassOptions options;
    options.asyncDispatch = asyncDispatch;
    options.numWorkerThreads = numWorkerThreads;
    options.minTaskSize = minTaskSize;
    pm.addPass(createAsyncParallelForPass(options));
#else
    pm.addPass(createAsyncParallelForPass(asyncDispatch, numWorkerThreads,
                                          minTaskSize));
#endif
    if (failed(runPipeline(pm, getOperation())))
      signalPassFailure();
  }
};

// The version of the LLVM/MLIR libraries of the process that loads us, as
// opposed to LLVM_VERSION_* (the headers we were compiled against).
bool sameMlirVersion() {
  unsigned major = 0, minor = 0, patch = 0;
  LLVMGetVersion(&major, &minor, &patch);
  if (major == LLVM_VERSION_MAJOR && minor == LLVM_VERSION_MINOR &&
      patch == LLVM_VERSION_PATCH)
    return true;
  llvm::errs() << "libmlir_async_lowering_fixes: this plugin was built for MLIR "
               << LLVM_VERSION_STRING << " but is loaded by MLIR " << major
               << "." << minor << "." << patch
               << ": build it for that version (make lowering-fixes)\n";
  return false;
}

} // namespace

extern "C" __attribute__((visibility("default"))) ::mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  if (!sameMlirVersion())
    // An API version no mlir-opt accepts: it refuses the plugin (and exits
    // non-zero) without calling into it.
    return {0, "mlir_async_lowering_fixes", LLVM_VERSION_STRING, nullptr};
  return {MLIR_PLUGIN_API_VERSION, "mlir_async_lowering_fixes",
          LLVM_VERSION_STRING,
          []() { PassRegistration<AsyncParallelForFixedPass>(); }};
}
