// Under C++17 the installed header declares MLIR's functions exactly as
// MLIR 19's mlir/ExecutionEngine/AsyncRuntime.h does: a C++ file may
// include both, since a C function declared twice with different types is
// an error ("conflicting declaration of C function"). Compiled by
// scripts/corpus/aot_test.sh with -std=c++17 -Werror.
#include <mlir/ExecutionEngine/AsyncRuntime.h>
#include <mlir-async-runtime/AsyncRuntime.h>

#include <type_traits>

// The types are MLIR's own, not look-alikes.
static_assert(std::is_same<mlir::runtime::ValueStorage, std::byte *>::value, "");
static_assert(std::is_same<decltype(&mlir::runtime::mlirAsyncRuntimeExecute),
                           void (*)(mlir::runtime::CoroHandle,
                                    mlir::runtime::CoroResume)>::value, "");

int main() {
  RustMlirAsyncRuntimeStats stats{};
  (void)stats;
  return 0;
}
