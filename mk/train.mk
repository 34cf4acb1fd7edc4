# SPDX-License-Identifier: MIT
# libtrain: the trainer's library (train/*.c except the CLI's main), built
# with OpenMP against OpenBLAS's OpenMP flavour (Debian's
# libopenblas-openmp-dev), so our loops and the GEMMs share one thread pool.
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

LIBTRAIN_SRCS := $(filter-out train/main.c,$(wildcard train/*.c))
LIBTRAIN_OBJS := $(LIBTRAIN_SRCS:%.c=$(BUILD)/%.o)
LIBTRAIN := $(BUILD)/libtrain.a
LIBTRAIN_LIBS := $(OPENBLAS_LIBS) -fopenmp

$(LIBTRAIN_OBJS) $(BUILD)/train/main.o: ALL_CFLAGS += -fopenmp $(OPENBLAS_CFLAGS) -Itrain

$(LIBTRAIN): $(LIBTRAIN_OBJS)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

ALL_TARGETS += $(LIBTRAIN)

# Unit tests of the trainer (tests/unit/test_train_*.c) link libtrain too.
$(BUILD)/tests/test_train_%: $(BUILD)/tests/unit/test_train_%.o $(LIBTRAIN) \
		$(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS) \
		$(LIBDATA_LIBS) $(REQ_LIBS)

$(BUILD)/tests/unit/test_train_%.o: ALL_CFLAGS += -fopenmp $(OPENBLAS_CFLAGS) -Itrain

# The trainer's test driver (tests/drivers/drv_train.c) links libtrain.
$(BUILD)/tests/drv_train: $(BUILD)/tests/drivers/drv_train.o $(LIBTRAIN) \
		$(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS) \
		$(LIBDATA_LIBS) $(REQ_LIBS)

$(BUILD)/tests/drivers/drv_train.o: ALL_CFLAGS += -fopenmp $(OPENBLAS_CFLAGS) -Itrain
