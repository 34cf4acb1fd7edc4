# SPDX-License-Identifier: MIT
# The CUDA backend (train/cuda/, README.md there).  Where make config found
# CUDA, cuBLASLt and cuDNN 9 (HAVE_CUDA, HAVE_CUBLAS, HAVE_CUDNN), nvcc
# builds it into $(BUILD)/libtrain_cuda.a, which whatever links libtrain
# links too (LIBTRAIN_LIBS), with those libraries.  Elsewhere libtrain
# takes train/cuda/cuda_stub.c, whose ops_cuda() says the build has no
# CUDA backend, and the backend's host-side C (cuda_host.c, unit-tested on
# every machine).  The CPU build never needs CUDA; no GPU is queried here.
#
# CUDA_ARCH: the compute capabilities to build machine code for (default
# Ampere and Hopper, `make CUDA_ARCH=90` for Hopper only), plus PTX of the
# last for newer GPUs.  No --use_fast_math: the kernels' float results are
# compared with the CPU backend's, and written so that they round alike.

CUDA_HOME ?= /usr/local/cuda
CUDA_ARCH ?= 80 90
CUDA_GENCODE = $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) \
	-gencode arch=compute_$(lastword $(CUDA_ARCH)),code=compute_$(lastword $(CUDA_ARCH))

ifeq ($(HAVE_CUDA)$(HAVE_CUBLAS)$(HAVE_CUDNN),111)
CUDA_BACKEND := 1
else
CUDA_BACKEND := 0
endif

CUDA_TEST := $(BUILD)/tests/test_train_cuda

ifeq ($(CUDA_BACKEND),1)
CUDA_CU_SRCS := $(wildcard train/cuda/*.cu)
CUDA_OBJS := $(CUDA_CU_SRCS:train/cuda/%.cu=$(BUILD)/cuda/%.o) \
	$(BUILD)/cuda/cuda_host.o
LIBTRAIN_CUDA := $(BUILD)/libtrain_cuda.a
# Linked after libtrain (LIBTRAIN_LIBS follows it on every link line); the
# shared libraries only where something uses them.
CUDA_BACKEND_LIBS := $(LIBTRAIN_CUDA) -L$(CUDA_HOME)/lib64 \
	-Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,--push-state,--as-needed -lcudnn \
	-lcublasLt -lcudart -lstdc++ -Wl,--pop-state
# train/cuda's C goes into libtrain_cuda.a, not libtrain.
CUDA_LIBTRAIN_EXCLUDE := train/cuda/%.c

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

$(BUILD)/cuda/%.o: train/cuda/%.c
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) $(TRAIN_CFLAGS) -c -o $@ $<

$(LIBTRAIN_CUDA): $(CUDA_OBJS)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

# The backend's unit test links the backend alone: on a machine without a
# GPU ops_cuda() must fail cleanly, and it shows that the link works.
$(CUDA_TEST): $(BUILD)/tests/unit/test_train_cuda.o $(LIBTRAIN_CUDA)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $< $(CUDA_BACKEND_LIBS) -lm
else
LIBTRAIN_CUDA :=
CUDA_BACKEND_LIBS :=
CUDA_LIBTRAIN_EXCLUDE :=

$(CUDA_TEST): $(BUILD)/tests/unit/test_train_cuda.o \
		$(BUILD)/libtrain/cuda/cuda_host.o $(BUILD)/libtrain/cuda/cuda_stub.o
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ -lm
endif

ALL_TARGETS += $(LIBTRAIN_CUDA) $(CUDA_TEST)

.PHONY: cuda
cuda: $(LIBTRAIN_CUDA) $(CUDA_TEST)
