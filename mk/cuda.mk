# SPDX-License-Identifier: MIT
# The CUDA backend (train/cuda/, README.md there).  Where make config found
# CUDA, cuBLASLt and cuDNN 9 (HAVE_CUDA_BACKEND, mk/config.mk), nvcc builds
# it into $(BUILD)/libtrain_cuda.a, which everything that links libtrain
# links after it (LIBTRAIN_LIBS), with those libraries; elsewhere libtrain
# has train/ops_cuda_stub.c, whose ops_cuda() says the build has no CUDA
# backend.  The CPU build never needs CUDA, and no GPU is queried here.
# Included after mk/train.mk.
#
# CUDA_ARCH: the compute capabilities to build machine code for (default
# Ampere and Hopper; `make CUDA_ARCH=90` for Hopper only), plus PTX of the
# last one for newer GPUs.  No --use_fast_math: the kernels' float results
# are compared with the CPU backend's, and are written to round alike.

CUDA_HOME ?= /usr/local/cuda
CUDA_ARCH ?= 80 90
CUDA_GENCODE = $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) \
	-gencode arch=compute_$(lastword $(CUDA_ARCH)),code=compute_$(lastword $(CUDA_ARCH))

# The backend's unit test (tests/unit/test_train_cuda.c) links the backend
# alone, or its host-side C and the stub where it is not built: it shows
# the link works, and that ops_cuda() fails cleanly without a GPU.
CUDA_TEST := $(BUILD)/tests/test_train_cuda

$(BUILD)/cuda/%.o: train/cuda/%.c
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) $(TRAIN_CFLAGS) -c -o $@ $<

ifeq ($(HAVE_CUDA_BACKEND),1)
CUDA_CU_SRCS := $(wildcard train/cuda/*.cu)
CUDA_OBJS := $(CUDA_CU_SRCS:train/cuda/%.cu=$(BUILD)/cuda/%.o) \
	$(BUILD)/cuda/cuda_host.o
LIBTRAIN_CUDA := $(BUILD)/libtrain_cuda.a
# After libtrain on every link line; the shared libraries recorded only
# where something uses them.
CUDA_BACKEND_LIBS := $(LIBTRAIN_CUDA) -L$(CUDA_HOME)/lib64 \
	-Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,--push-state,--as-needed -lcudnn \
	-lcublasLt -lcudart -lstdc++ -Wl,--pop-state
LIBTRAIN_LIBS += $(CUDA_BACKEND_LIBS)

NVCC_FLAGS := -std=c++17 -O3 -lineinfo $(CUDA_GENCODE) -Itrain \
	-Xcompiler -Wall,-Wextra -MMD -MP
ifneq ($(DEVELOPER),)
NVCC_FLAGS += -Werror all-warnings -Xcompiler -Werror
endif
ifeq ($(V),1)
QUIET_NVCC =
else
QUIET_NVCC = @echo '   NVCC    $@';
endif

# A new probe (make reconfigure) rebuilds the backend.
$(BUILD)/cuda/%.o: train/cuda/%.cu $(CONFIG_MK)
	@mkdir -p $(@D)
	$(QUIET_NVCC)$(NVCC) $(NVCC_FLAGS) -c -o $@ $<

$(LIBTRAIN_CUDA): $(CUDA_OBJS)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

# Built before anything links libtrain, and a change to it relinks them.
$(LIBTRAIN): $(LIBTRAIN_CUDA)

$(CUDA_TEST): $(BUILD)/tests/unit/test_train_cuda.o $(LIBTRAIN_CUDA)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $< $(CUDA_BACKEND_LIBS) -lm

# Under ASan the driver maps memory in the shadow gap, and it and the
# libraries keep allocations to the end (STYLE G12).
CHECK_ASAN_OPTIONS += protect_shadow_gap=0
check: export LSAN_OPTIONS := suppressions=$(CURDIR)/tests/lsan-cuda.supp$(if $(LSAN_OPTIONS),:$(LSAN_OPTIONS))
else
LIBTRAIN_CUDA :=

$(CUDA_TEST): $(BUILD)/tests/unit/test_train_cuda.o $(BUILD)/cuda/cuda_host.o \
		$(BUILD)/libtrain/ops_cuda_stub.o
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ -lm
endif

ALL_TARGETS += $(LIBTRAIN_CUDA) $(CUDA_TEST)

.PHONY: cuda
cuda: $(LIBTRAIN_CUDA) $(CUDA_TEST)
