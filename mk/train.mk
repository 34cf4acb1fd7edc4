# SPDX-License-Identifier: MIT
# libtrain: the trainer's library (train/*/*.c, the layers under the
# program train/main.c; train/README.md shows them), built with OpenMP
# against OpenBLAS's OpenMP flavour (Debian's libopenblas-openmp-dev), so
# our loops and the GEMMs share one thread pool.
# Whatever links $(LIBTRAIN) adds $(LIBTRAIN_LIBS) to its libraries.

OPENBLAS_OMP_DIR := /usr/lib/x86_64-linux-gnu/openblas-openmp
OPENBLAS_OMP_INC := /usr/include/x86_64-linux-gnu/openblas-openmp
ifneq ($(wildcard $(OPENBLAS_OMP_DIR)/libopenblas.so),)
OPENBLAS_CFLAGS := -I$(OPENBLAS_OMP_INC)
OPENBLAS_LIBS := -L$(OPENBLAS_OMP_DIR) -Wl,-rpath,$(OPENBLAS_OMP_DIR) -lopenblas
else
OPENBLAS_CFLAGS :=
OPENBLAS_LIBS := -lopenblas
endif

# The program (train/main.c and the folders below, which share run/run.h)
# stops the run on an error, so it is linked into the tool only; libtrain's
# functions return their errors.
TRAIN_PROG_DIRS := data run step trainer zero
TRAIN_PROG_SRCS := train/main.c $(wildcard $(TRAIN_PROG_DIRS:%=train/%/*.c))
# train/cuda/ is the CUDA backend's (mk/cuda.mk); where it is not built,
# ops_cuda() is a stub that says so.  ops_open() (ops_select.c) chooses
# the backend.
LIBTRAIN_SRCS := $(filter-out $(TRAIN_PROG_SRCS) train/comm/comm_nccl.c \
	train/comm/comm_nccl_stub.c train/cuda/%,$(wildcard train/*/*.c)) \
	train/ops_select.c
ifneq ($(HAVE_CUDA_BACKEND),1)
LIBTRAIN_SRCS += train/ops_cuda_stub.c
endif
# NCCL (several ranks on GPUs: comm_nccl()) where the CUDA backend and
# NCCL are both built; elsewhere a stub that says NCCL is not built.
ifeq ($(HAVE_NCCL)$(HAVE_CUDA_BACKEND),11)
LIBTRAIN_SRCS += train/comm/comm_nccl.c
else
LIBTRAIN_SRCS += train/comm/comm_nccl_stub.c
endif
# Objects go under build/libtrain/, so build/train can be the tool.
LIBTRAIN_OBJS := $(LIBTRAIN_SRCS:train/%.c=$(BUILD)/libtrain/%.o)
TRAIN_PROG_OBJS := $(TRAIN_PROG_SRCS:train/%.c=$(BUILD)/libtrain/%.o)
LIBTRAIN := $(BUILD)/libtrain.a
PROTOC_C ?= protoc-c
# protobuf-c packs the TensorBoard and VisualDL records, ISA-L's
# crc32_iscsi is TensorBoard's CRC-32C (Debian: libprotobuf-c-dev,
# protobuf-c-compiler, libisal-dev).
LIBTRAIN_LIBS := $(OPENBLAS_LIBS) -fopenmp -lprotobuf-c -lisal
# -fno-math-errno: math calls never set errno here (nothing reads it), so
# sqrtf and friends vectorize.
TRAIN_CFLAGS := -fopenmp -fno-math-errno $(OPENBLAS_CFLAGS) -Itrain \
	-I$(BUILD)/proto

# Fail early with the fix when they are missing (demo, test and check
# install them first through `make deps`).
ifeq ($(filter deps demo test check clean help config reconfigure,$(MAKECMDGOALS)),)
TRAIN_DEPS_OK := $(shell printf '\043include <protobuf-c/protobuf-c.h>\n\043include <isa-l/crc.h>\n' | \
	$(CC) -E -x c - >/dev/null 2>&1 && command -v $(PROTOC_C) >/dev/null && echo 1)
ifneq ($(TRAIN_DEPS_OK),1)
$(error the trainer needs protobuf-c (libprotobuf-c-dev, protobuf-c-compiler) and ISA-L (libisal-dev): run scripts/install-deps, or make deps)
endif
endif

# The records of the event files (train/log/*.proto, the fields we write of
# TensorFlow's Event and VisualDL's Record), compiled by protoc-c into
# $(BUILD)/proto/ at build time; the generated code is never committed.
TRAIN_PROTOS := $(wildcard train/log/*.proto)
TRAIN_PROTO_HDRS := $(TRAIN_PROTOS:train/log/%.proto=$(BUILD)/proto/%.pb-c.h)
LIBTRAIN_OBJS += $(TRAIN_PROTOS:train/log/%.proto=$(BUILD)/proto/%.pb-c.o)
$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: train/log/%.proto
	@mkdir -p $(@D)
	@echo '   PROTOC  $@'
	$(Q)$(PROTOC_C) --proto_path=train/log --c_out=$(BUILD)/proto $<
$(BUILD)/proto/%.pb-c.o: $(BUILD)/proto/%.pb-c.c
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) -I$(BUILD)/proto -c -o $@ $<
# The writers (and their unit test) include the generated headers.
$(BUILD)/libtrain/log/tb_events.o $(BUILD)/libtrain/log/vdl_records.o \
	$(BUILD)/tests/unit/test_train_events.o: $(TRAIN_PROTO_HDRS)

# MPI (Open MPI: libopenmpi-dev) for several ranks; without it the trainer
# runs one rank and says so when started by mpirun.  A new probe (make
# reconfigure) rebuilds the backend.
$(BUILD)/libtrain/comm/comm_mpi.o: $(CONFIG_MK)

# NCCL (GPU buffers; CUDA toolkit) in libtrain (above), its bootstrap over
# MPI or the TCP rendezvous; its own test (MPI for the bootstrap) built and
# linked here, run by `make test-gpu` on a machine with GPUs.
CUDA_HOME ?= /usr/local/cuda
# -isystem: nccl.h's old-style prototypes are CUDA's, not ours (DEVELOPER=1).
NCCL_CFLAGS := -isystem $(CUDA_HOME)/include
NCCL_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnccl \
	-lcudart
$(BUILD)/libtrain/comm/comm_nccl.o: train/comm/comm_nccl.c $(CONFIG_MK)
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) $(TRAIN_CFLAGS) $(NCCL_CFLAGS) -c -o $@ $<
ifeq ($(HAVE_NCCL)$(HAVE_CUDA_BACKEND),11)
# (Recorded only where something links comm_nccl(): the train tool.)
LIBTRAIN_LIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 \
	-Wl,--push-state,--as-needed -lnccl -lcudart -Wl,--pop-state
endif
ifeq ($(HAVE_NCCL)$(HAVE_MPI),11)
TEST_GPU_BIN := $(BUILD)/tests/test_comm_nccl
$(BUILD)/tests/comm/test_comm_nccl.o: tests/comm/test_comm.c
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) $(TRAIN_CFLAGS) $(NCCL_CFLAGS) \
		-DTEST_NCCL -DTEST_CUDA -c -o $@ $<
$(TEST_GPU_BIN): $(BUILD)/tests/comm/test_comm_nccl.o \
		$(BUILD)/libtrain/comm/comm_nccl.o $(LIBTRAIN)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS) \
		$(NCCL_LIBS)
ALL_TARGETS += $(TEST_GPU_BIN)
endif
# The MPI communicator's test (tests/comm/test_comm.c, run under mpirun by
# tests/train/parallel).
$(BUILD)/tests/comm/test_comm.o: ALL_CFLAGS += $(TRAIN_CFLAGS)
$(BUILD)/tests/test_comm_mpi: $(BUILD)/tests/comm/test_comm.o $(LIBTRAIN)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS)
ALL_TARGETS += $(BUILD)/tests/test_comm_mpi
# The same test over TCP sockets (comm_tcp: ranks started by srun or
# RANK/WORLD_SIZE, run by tests/train/parallel and tests/cluster/run), and
# through host memory (comm_staged: guarded "device" memory here; on a GPU
# in the GPU bundle, where ranks share it).
$(BUILD)/tests/comm/test_comm_tcp.o: tests/comm/test_comm.c
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) $(TRAIN_CFLAGS) -DTEST_TCP -c -o $@ $<
$(BUILD)/tests/comm/test_comm_staged.o: tests/comm/test_comm.c
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) $(TRAIN_CFLAGS) -DTEST_STAGED -c -o $@ $<
$(BUILD)/tests/test_comm_tcp: $(BUILD)/tests/comm/test_comm_tcp.o $(LIBTRAIN)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS)
$(BUILD)/tests/test_comm_staged: $(BUILD)/tests/comm/test_comm_staged.o \
		$(LIBTRAIN)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS)
ALL_TARGETS += $(BUILD)/tests/test_comm_tcp $(BUILD)/tests/test_comm_staged
ifeq ($(HAVE_CUDA_BACKEND),1)
TEST_STAGED_CUDA := $(BUILD)/tests/test_comm_staged_cuda
$(BUILD)/tests/comm/test_comm_staged_cuda.o: tests/comm/test_comm.c
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) $(TRAIN_CFLAGS) $(NCCL_CFLAGS) \
		-DTEST_STAGED -DTEST_CUDA -c -o $@ $<
$(TEST_STAGED_CUDA): $(BUILD)/tests/comm/test_comm_staged_cuda.o $(LIBTRAIN)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS) \
		-L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart
ALL_TARGETS += $(TEST_STAGED_CUDA)
endif
ifeq ($(HAVE_MPI),1)
$(BUILD)/libtrain/comm/comm_mpi.o: TRAIN_CFLAGS += -DHAVE_MPI \
	$(shell mpicc --showme:compile)
LIBTRAIN_LIBS += $(shell mpicc --showme:link) -lpthread
endif

$(BUILD)/libtrain/%.o: train/%.c
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) $(TRAIN_CFLAGS) -c -o $@ $<

# (mk/cuda.mk adds the CUDA backend's library as a prerequisite: not a
# member, hence the filter.)
$(LIBTRAIN): $(LIBTRAIN_OBJS)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $(filter %.o,$^)

# The `train` tool.
TRAIN_TOOL := $(BUILD)/train
$(TRAIN_TOOL): $(TRAIN_PROG_OBJS) $(LIBTRAIN) $(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS) \
		$(LIBDATA_LIBS) $(REQ_LIBS)

ALL_TARGETS += $(LIBTRAIN) $(TRAIN_TOOL)

# Unit tests of the trainer (tests/unit/test_train_*.c) link libtrain too.
$(BUILD)/tests/test_train_%: $(BUILD)/tests/unit/test_train_%.o $(LIBTRAIN) \
		$(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS) \
		$(LIBDATA_LIBS) $(REQ_LIBS)

$(BUILD)/tests/unit/test_train_%.o: ALL_CFLAGS += $(TRAIN_CFLAGS)

# The trainer's test driver (tests/drivers/drv_train.c) links libtrain.
$(BUILD)/tests/drv_train: $(BUILD)/tests/drivers/drv_train.o $(LIBTRAIN) \
		$(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS) \
		$(LIBDATA_LIBS) $(REQ_LIBS)

$(BUILD)/tests/drivers/drv_train.o: ALL_CFLAGS += $(TRAIN_CFLAGS)
