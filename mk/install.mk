# Installation, for ahead-of-time users of the runtime (docs/aot.md) and the
# tools:
#   $(PREFIX)/lib/libmlir_async_runtime.so and libmlir_async_runtime.a
#   $(PREFIX)/include/mlir-async-runtime/AsyncRuntime.h
#   $(PREFIX)/lib/pkgconfig/mlir-async-runtime.pc (shared) and
#                           mlir-async-runtime-static.pc (static)
#   $(PREFIX)/bin/jit-harness and trace-view
# Variables from the top Makefile: RUNTIME_SO, RUNTIME_A, HARNESS, TRACE_VIEW.
#   make install PREFIX=/opt/mlir-async       (default /usr/local)
#   make install DESTDIR=/tmp/stage PREFIX=/usr  (staged: the .pc files say /usr)
PREFIX  ?= /usr/local
DESTDIR ?=
PC_FILES := mlir-async-runtime mlir-async-runtime-static
INSTALL_DIR := $(DESTDIR)$(PREFIX)

.PHONY: install uninstall

install: build ## the runtime (.so, .a, C header, pkg-config files) and the tools into PREFIX (and DESTDIR)
	install -d $(INSTALL_DIR)/lib/pkgconfig $(INSTALL_DIR)/include/mlir-async-runtime $(INSTALL_DIR)/bin
	install -m 0755 $(RUNTIME_SO) $(INSTALL_DIR)/lib/libmlir_async_runtime.so
	install -m 0644 $(RUNTIME_A) $(INSTALL_DIR)/lib/libmlir_async_runtime.a
	install -m 0644 runtime/include/mlir-async-runtime/AsyncRuntime.h $(INSTALL_DIR)/include/mlir-async-runtime/AsyncRuntime.h
	@version=$$(sed -n 's/^version = "\(.*\)"/\1/p' runtime/Cargo.toml); \
	for pc in $(PC_FILES); do \
	  echo "install $(INSTALL_DIR)/lib/pkgconfig/$$pc.pc (prefix=$(PREFIX), version $$version)"; \
	  sed -e 's|@PREFIX@|$(PREFIX)|g' -e "s|@VERSION@|$$version|g" runtime/pkgconfig/$$pc.pc.in \
	    > $(INSTALL_DIR)/lib/pkgconfig/$$pc.pc.tmp && \
	  chmod 0644 $(INSTALL_DIR)/lib/pkgconfig/$$pc.pc.tmp && \
	  mv $(INSTALL_DIR)/lib/pkgconfig/$$pc.pc.tmp $(INSTALL_DIR)/lib/pkgconfig/$$pc.pc || exit 1; \
	done
	install -m 0755 $(HARNESS) $(INSTALL_DIR)/bin/jit-harness
	install -m 0755 $(TRACE_VIEW) $(INSTALL_DIR)/bin/trace-view

uninstall: ## removes what make install put into PREFIX (and DESTDIR)
	rm -f $(INSTALL_DIR)/lib/libmlir_async_runtime.so $(INSTALL_DIR)/lib/libmlir_async_runtime.a \
	  $(INSTALL_DIR)/include/mlir-async-runtime/AsyncRuntime.h \
	  $(foreach pc,$(PC_FILES),$(INSTALL_DIR)/lib/pkgconfig/$(pc).pc) \
	  $(INSTALL_DIR)/bin/jit-harness $(INSTALL_DIR)/bin/trace-view
	-rmdir $(INSTALL_DIR)/include/mlir-async-runtime 2>/dev/null
