# The Python wheel mlir-async-rs (python/, docs/catalyst.md): our
# libmlir_async_runtime.so, built by setuptools-rust as a plain cdylib
# (Binding.NoBinding), and the module mlir_async_rs (library_path(), the
# switch for PennyLane Catalyst, python -m mlir_async_rs --path/--check).
# Built offline with the pinned tools that make setup installs into
# target/wheel-tools (python/build-requirements.txt): pip --isolated (no
# configuration or environment of the user's) --no-index (no index, no
# version check) --no-build-isolation (the build tools of that venv, no
# download); cargo builds into
# target/wheel-build/cargo, so that its `cargo rustc --crate-type cdylib`
# never invalidates make build's target/release. auditwheel repair gives
# the wheel its manylinux tag (the oldest glibc whose symbol versions the
# library needs), and auditwheel show must accept it.
# Variables from the top Makefile: WHEEL_DIR.
#   make wheel     target/wheels/mlir_async_rs-VERSION-py3-none-manylinux_2_NN_x86_64.whl
WHEEL_TOOLS := $(CURDIR)/target/wheel-tools
WHEEL_BUILD := $(CURDIR)/target/wheel-build

.PHONY: wheel

wheel: toolchain ## the Python wheel mlir-async-rs (the runtime, and the switch for PennyLane Catalyst) into target/wheels
	@bash scripts/toolchain/setup_venv.sh --check $(WHEEL_TOOLS) python/build-requirements.txt
	rm -rf $(WHEEL_BUILD)/dist $(WHEEL_BUILD)/setuptools $(WHEEL_DIR)/mlir_async_rs-*.whl
	CARGO_TARGET_DIR=$(WHEEL_BUILD)/cargo $(WHEEL_TOOLS)/bin/python -m pip --isolated wheel --no-index --no-deps --no-build-isolation \
	  --quiet -w $(WHEEL_BUILD)/dist ./python
	PATH=$(WHEEL_TOOLS)/bin:$$PATH auditwheel repair --plat auto -w $(WHEEL_DIR) $(WHEEL_BUILD)/dist/mlir_async_rs-*.whl
	$(WHEEL_TOOLS)/bin/auditwheel show $(WHEEL_DIR)/mlir_async_rs-*.whl
