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
