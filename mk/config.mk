# SPDX-License-Identifier: MIT
# Optional parts (OpenMP, CUDA, cuBLAS, NCCL, MPI) are detected once by
# compiling and linking a tiny program (scripts/probe-features), cached in
# $(BUILD)/config.mk, and can be overridden: `make HAVE_CUDA=0`.  A missing
# optional part never fails the build.

CONFIG_MK := $(BUILD)/config.mk
yesno = $(if $(filter 1,$(1)),✓,✗)

ifeq ($(wildcard $(CONFIG_MK)),)
$(shell mkdir -p $(BUILD) && CC="$(CC)" NVCC="$(NVCC)" \
	scripts/probe-features > $(CONFIG_MK).tmp && mv $(CONFIG_MK).tmp $(CONFIG_MK))
include $(CONFIG_MK)
$(info optional parts (probed once; `make config` shows them again):)
$(info $(call yesno,$(HAVE_OPENMP)) OpenMP)
$(info $(call yesno,$(HAVE_CUDA)) CUDA)
$(info $(call yesno,$(HAVE_CUBLAS)) cuBLAS/cuBLASLt)
$(info $(call yesno,$(HAVE_NCCL)) NCCL)
$(info $(call yesno,$(HAVE_MPI)) MPI)
else
include $(CONFIG_MK)
endif

.PHONY: config reconfigure
config:
	@echo '$(call yesno,$(HAVE_OPENMP)) OpenMP   (HAVE_OPENMP=$(HAVE_OPENMP))'
	@echo '$(call yesno,$(HAVE_CUDA)) CUDA     (HAVE_CUDA=$(HAVE_CUDA), nvcc: $(NVCC))'
	@echo '$(call yesno,$(HAVE_CUBLAS)) cuBLAS   (HAVE_CUBLAS=$(HAVE_CUBLAS))'
	@echo '$(call yesno,$(HAVE_NCCL)) NCCL     (HAVE_NCCL=$(HAVE_NCCL))'
	@echo '$(call yesno,$(HAVE_MPI)) MPI      (HAVE_MPI=$(HAVE_MPI))'

reconfigure:
	rm -f $(CONFIG_MK)
	@$(MAKE) --no-print-directory config

# Required libraries: fail early with the fix, not with a compiler error.
# (demo, test and check install them first through `make deps`.)
ifeq ($(filter deps demo test check clean help config reconfigure,$(MAKECMDGOALS)),)
REQ_HEADERS_OK := $(shell printf '\043include <utf8proc.h>\n\043include <zstd.h>\n\043include <json-c/json.h>\n\043include <zip.h>\n\043include <unicode/ubrk.h>\n\043define PCRE2_CODE_UNIT_WIDTH 8\n\043include <pcre2.h>\n' | \
	$(CC) -E -x c - >/dev/null 2>&1 && echo 1)
ifneq ($(REQ_HEADERS_OK),1)
$(error required libraries are missing (utf8proc, zstd, json-c, libzip, ICU, PCRE2): run scripts/install-deps, or make deps)
endif
endif
