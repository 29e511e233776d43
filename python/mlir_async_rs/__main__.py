"""python -m mlir_async_rs: where the runtime library is, and which runtime
a Catalyst program compiled in this process binds to.

    python -m mlir_async_rs --path          the library, for mlir-cpu-runner -shared-libs=$(...)
    python -m mlir_async_rs --check         compiles a one-QNode Catalyst program with this
                                            environment and prints what it binds to
    python -m mlir_async_rs --check --use   the same, inside mlir_async_rs.use()
    python -m mlir_async_rs --version

Results on stdout; errors as one line on stderr, exit status 1 (2 for usage).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import List, Optional

import mlir_async_rs


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlir_async_rs", description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--path", action="store_true", help="print the runtime library's absolute path")
    what.add_argument("--check", action="store_true",
                      help="compile a one-QNode Catalyst program now and print which runtime it binds to")
    what.add_argument("--version", action="store_true", help="print the package's version (the runtime crate's)")
    parser.add_argument("--use", action="store_true", help="with --check: inside mlir_async_rs.use()")
    parser.add_argument("--library", help="with --check --use: link this library instead of the package's")
    args = parser.parse_args(argv)
    if (args.use or args.library) and not args.check:
        parser.error("--use and --library go with --check")
    if args.library and not args.use:
        parser.error("--library goes with --use")
    # A warning of the switch is a one-line message too.
    warnings.formatwarning = lambda message, *_: f"{message}\n"
    try:
        if args.path:
            print(mlir_async_rs.library_path())
        elif args.version:
            print(mlir_async_rs.__version__)
        elif args.use:
            with mlir_async_rs.use(args.library):
                print(mlir_async_rs.check())
        else:
            print(mlir_async_rs.check())
    except mlir_async_rs.SwitchError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
