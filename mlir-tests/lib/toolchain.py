#!/usr/bin/env python3
"""Where the LLVM/MLIR toolchain is, and its programs: the project's one
knob, LLVM_PREFIX (an install prefix, Debian's layout .../llvm-N), read
from the environment when a caller gives none. Every script and lit.cfg.py
take the prefix from here; its MLIR version (pipelines.version_of_prefix)
picks the pipelines and the runner's name.

As a command (for the Makefile and bash scripts):
    toolchain.py prefix      prints the prefix ($LLVM_PREFIX or the default)
    toolchain.py bin         prints <prefix>/bin
    toolchain.py tool NAME   prints the path of a tool of tools() (e.g. filecheck)
"""
import glob
import os
import sys

import pipelines

DEFAULT_LLVM_PREFIX = '/usr/lib/llvm-19'
ENV_VAR = 'LLVM_PREFIX'


def llvm_prefix(explicit=None):
    """`explicit` when given, else $LLVM_PREFIX when set, else Debian's
    LLVM 19."""
    return explicit or os.environ.get(ENV_VAR) or DEFAULT_LLVM_PREFIX


def bin_dir(prefix=None):
    return os.path.join(llvm_prefix(prefix), 'bin')


def prefix_of_bin(bin_path):
    """The prefix whose bin directory is `bin_path` (scripts that take
    --llvm-bin or --mlir-bin)."""
    return os.path.dirname(os.path.normpath(bin_path))


def mlir_version(prefix=None, version=None):
    """The table row (pipelines.Version) of MLIR `version`, by default the
    version of the prefix."""
    table = pipelines.load()
    if version is None:
        version = pipelines.version_of_prefix(llvm_prefix(prefix))
    if version not in table:
        raise ValueError('no MLIR %d in %s (have %s)' % (
            version, pipelines.TABLE, ' '.join(map(str, sorted(table)))))
    return table[version]


def tools(prefix=None, version=None):
    """The toolchain's programs and libraries by role."""
    prefix = llvm_prefix(prefix)
    v = mlir_version(prefix, version)
    b = os.path.join(prefix, 'bin')
    l = os.path.join(prefix, 'lib')
    return {
        'mlir_opt': os.path.join(b, 'mlir-opt'),
        'mlir_translate': os.path.join(b, 'mlir-translate'),
        'mlir_cpu_runner': os.path.join(b, v.runner),
        'filecheck': os.path.join(b, 'FileCheck'),
        'not': os.path.join(b, 'not'),
        'mlir_c_runner_utils': os.path.join(l, 'libmlir_c_runner_utils.so'),
        'mlir_runner_utils': os.path.join(l, 'libmlir_runner_utils.so'),
        'cxx_runtime': os.path.join(l, 'libmlir_async_runtime.so'),
    }


def runner_utils(prefix=None):
    """The runner utils corpus programs call, comma-separated as the harness
    takes them."""
    t = tools(prefix)
    return t['mlir_c_runner_utils'] + ',' + t['mlir_runner_utils']


def toolchain_env(prefix=None, base=None):
    """The environment to run a toolchain's programs in: an LLVM unpacked
    outside the system (target/compat/N/usr/lib/llvm-N) finds its libraries
    (libMLIR in <prefix>/lib, libLLVM in <prefix>/../<multiarch>) through
    LD_LIBRARY_PATH."""
    env = dict(os.environ if base is None else base)
    prefix = os.path.abspath(llvm_prefix(prefix))
    if prefix.startswith('/usr/'):
        return env
    dirs = [os.path.join(prefix, 'lib')]
    dirs += sorted(glob.glob(os.path.join(os.path.dirname(prefix), '*-linux-gnu*')))
    if env.get('LD_LIBRARY_PATH'):
        dirs.append(env['LD_LIBRARY_PATH'])
    env['LD_LIBRARY_PATH'] = os.pathsep.join(dirs)
    return env


def main(argv):
    if argv[:1] == ['prefix'] and len(argv) == 1:
        print(llvm_prefix())
    elif argv[:1] == ['bin'] and len(argv) == 1:
        print(bin_dir())
    elif argv[:1] == ['tool'] and len(argv) == 2 and argv[1] in tools():
        print(tools()[argv[1]])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
