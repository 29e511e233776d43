# -*- Python -*-
"""lit configuration of the tests of our async-parallel-for patches
(lowering-fixes/*/*.patch, docs/lowering-bugs.md), written as upstream's
mlir/test/Dialect/Async/ tests are: `mlir-opt %s -pass-pipeline=
"builtin.module(async-parallel-for{...})" | FileCheck %s`, so that they go
upstream as they are.

Here `mlir-opt` is MLIR 19's with the plugin of make lowering-fixes loaded,
and `async-parallel-for{` is its async-parallel-for-fixed: the patched pass.
With --param unpatched=1 they run MLIR's own pass instead, where every one
of them must fail (make lowering-fixes-ci checks both).

Params: plugin=PATH (default: the plugin of llvm_prefix's version,
        target/lowering-fixes[/N]/libmlir_async_lowering_fixes.so),
        llvm_prefix=PATH (default $LLVM_PREFIX, else /usr/lib/llvm-19; MLIR 22:
        target/compat/22/root/usr/lib/llvm-22), unpatched=1
"""
import os
import sys

import lit.formats

config.name = 'lowering-fixes'
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = ['.mlir']
config.excludes = ['lit.cfg.py', 'Inputs']
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(config.test_source_root))
config.test_exec_root = os.path.join(root, 'target', 'lit-lowering-fixes')

sys.path.insert(0, os.path.join(root, 'mlir-tests', 'lib'))
import pipelines  # noqa: E402
import toolchain  # noqa: E402

prefix = os.path.abspath(toolchain.llvm_prefix(lit_config.params.get('llvm_prefix')))
version = pipelines.load()[pipelines.version_of_prefix(prefix)]
mlir_opt = os.path.join(prefix, 'bin', 'mlir-opt')
if lit_config.params.get('unpatched') == '1':
    lit_config.note('MLIR %d\'s own async-parallel-for (every test should fail)' % version.number)
else:
    plugin = lit_config.params.get('plugin')
    try:
        plugin = os.path.abspath(plugin) if plugin else version.plugin()
    except ValueError as e:
        lit_config.fatal(str(e))
    lit_config.note('async-parallel-for-fixed of %s' % plugin)
    mlir_opt += ' --load-pass-plugin=' + plugin
    # Regex substitutions, in order: the pass name (only as a pass, i.e.
    # followed by its options), then the tool.
    config.substitutions.append((r'\basync-parallel-for\{', version.fixed_parallel_for + '{'))
config.substitutions.append((r'(?<![\w/.-])mlir-opt\b', mlir_opt))
# The integration test's libraries and lowering (upstream's lit.cfg of
# mlir/test/Integration/Dialect/Async/CPU has the same).
lib = os.path.join(prefix, 'lib')
config.substitutions += [
    ('%mlir_c_runner_utils', os.path.join(lib, 'libmlir_c_runner_utils.so')),
    ('%mlir_runner_utils', os.path.join(lib, 'libmlir_runner_utils.so')),
    ('%mlir_async_runtime', os.path.join(lib, 'libmlir_async_runtime.so')),
    ('%lower', 'async-to-async-runtime,func.func(async-runtime-ref-counting,'
               'async-runtime-ref-counting-opt),convert-async-to-llvm,'
               'func.func(convert-linalg-to-loops),convert-scf-to-cf,func.func(arith-expand),'
               'memref-expand,convert-vector-to-llvm,finalize-memref-to-llvm,convert-func-to-llvm,'
               'convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts'),
]

config.substitutions.append((r'(?<![\w/.-])mlir-cpu-runner\b', os.path.join(prefix, 'bin', version.runner)))
config.environment['PATH'] = os.pathsep.join(
    [os.path.join(prefix, 'bin'), config.environment.get('PATH', '')])
if 'LD_LIBRARY_PATH' in toolchain.toolchain_env(prefix, {}):
    # An unpacked MLIR (target/compat/N).
    config.environment['LD_LIBRARY_PATH'] = toolchain.toolchain_env(
        prefix, config.environment)['LD_LIBRARY_PATH']
