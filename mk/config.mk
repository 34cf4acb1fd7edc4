# SPDX-License-Identifier: MIT
# Optional parts (OpenMP, CUDA, cuBLAS, cuDNN, NCCL, MPI) are detected by compiling
# and linking a tiny program (scripts/probe-features), cached in
# $(BUILD)/config.mk, and can be overridden: `make HAVE_CUDA=0`.  A missing
# optional part never fails the build.
#
# The cache is kept while what the probe depends on stays the same (its key,
# `scripts/probe-features --key`: the compilers found and the package
# database, in a few ms), and probed again when that changes: so `make
# demo`, whose first make reads this file before `make deps` installs Open
# MPI, builds with MPI in the make it runs after, and so does the next make
# after an `apt-get install libnccl-dev`.  $(BUILD)/config.mk is rewritten
# only when an answer changes, since objects that test a feature depend on it.

CONFIG_MK := $(BUILD)/config.mk
CONFIG_KEY_FILE := $(BUILD)/config.key
PROBE_ENV := CC="$(CC)" NVCC="$(NVCC)"
yesno = $(if $(filter 1,$(1)),✓,✗)

CONFIG_KEY := $(shell $(PROBE_ENV) scripts/probe-features --key)
ifeq ($(wildcard $(CONFIG_MK)),)
CONFIG_WHY := probed once
else ifneq ($(file <$(CONFIG_KEY_FILE)),$(CONFIG_KEY))
CONFIG_WHY := probed again: the compilers or the installed packages changed
include $(CONFIG_MK)
CONFIG_WAS := $(HAVE_OPENMP) $(HAVE_CUDA) $(HAVE_CUBLAS) $(HAVE_NCCL) $(HAVE_MPI) \
	$(HAVE_CUDNN)
endif

ifneq ($(CONFIG_WHY),)
$(shell mkdir -p $(BUILD) && $(PROBE_ENV) scripts/probe-features \
	> $(CONFIG_MK).tmp.$$$$ && { cmp -s $(CONFIG_MK).tmp.$$$$ $(CONFIG_MK) && \
	rm -f $(CONFIG_MK).tmp.$$$$ || mv $(CONFIG_MK).tmp.$$$$ $(CONFIG_MK); } && \
	echo '$(CONFIG_KEY)' > $(CONFIG_KEY_FILE))
include $(CONFIG_MK)
# Each part, and for a second probe what it was before (✗ -> ✓ MPI).
config_line = $(if $(CONFIG_WAS),$(if $(filter $(2),$(word $(3),$(CONFIG_WAS))),,$(call yesno,$(word $(3),$(CONFIG_WAS))) -> ))$(call yesno,$(2)) $(1)
$(info optional parts ($(CONFIG_WHY); `make config` shows them again):)
$(info $(call config_line,OpenMP,$(HAVE_OPENMP),1))
$(info $(call config_line,CUDA,$(HAVE_CUDA),2))
$(info $(call config_line,cuBLAS/cuBLASLt,$(HAVE_CUBLAS),3))
$(info $(call config_line,cuDNN 9,$(HAVE_CUDNN),6))
$(info $(call config_line,NCCL,$(HAVE_NCCL),4))
$(info $(call config_line,MPI,$(HAVE_MPI),5))
else
include $(CONFIG_MK)
endif

# The CUDA backend (mk/cuda.mk) needs all three.
HAVE_CUDA_BACKEND := $(if $(filter 111,$(HAVE_CUDA)$(HAVE_CUBLAS)$(HAVE_CUDNN)),1,0)

.PHONY: config reconfigure
config:
	@echo '$(call yesno,$(HAVE_OPENMP)) OpenMP   (HAVE_OPENMP=$(HAVE_OPENMP))'
	@echo '$(call yesno,$(HAVE_CUDA)) CUDA     (HAVE_CUDA=$(HAVE_CUDA), nvcc: $(NVCC))'
	@echo '$(call yesno,$(HAVE_CUBLAS)) cuBLAS   (HAVE_CUBLAS=$(HAVE_CUBLAS))'
	@echo '$(call yesno,$(HAVE_CUDNN)) cuDNN 9  (HAVE_CUDNN=$(HAVE_CUDNN); with CUDA and cuBLAS: the CUDA backend)'
	@echo '$(call yesno,$(HAVE_NCCL)) NCCL     (HAVE_NCCL=$(HAVE_NCCL))'
	@echo '$(call yesno,$(HAVE_MPI)) MPI      (HAVE_MPI=$(HAVE_MPI))'

reconfigure:
	rm -f $(CONFIG_MK) $(CONFIG_KEY_FILE)
	@$(MAKE) --no-print-directory config

# Required libraries: fail early with the fix, not with a compiler error.
# (demo, test and check install them first through `make deps`.)
ifeq ($(filter deps demo test check clean help config reconfigure,$(MAKECMDGOALS)),)
REQ_HEADERS_OK := $(shell printf '\043include <utf8proc.h>\n\043include <zstd.h>\n\043include <json-c/json.h>\n\043include <zip.h>\n\043include <unicode/ubrk.h>\n\043define PCRE2_CODE_UNIT_WIDTH 8\n\043include <pcre2.h>\n\043include <nettle/sha2.h>\n' | \
	$(CC) -E -x c - >/dev/null 2>&1 && echo 1)
ifneq ($(REQ_HEADERS_OK),1)
$(error required libraries are missing (utf8proc, zstd, json-c, libzip, ICU, PCRE2, nettle): run scripts/install-deps, or make deps)
endif
endif
