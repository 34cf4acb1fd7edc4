# SPDX-License-Identifier: MIT
# The GPU checks (tests/gpu/README.md).  ops_compare runs every op of
# ops.h on the backend under test against the CPU's; `make test` runs its
# self-test (the CPU against the CPU, then planted faults).  `make
# gpu-bundle` builds $(GPU_BUNDLE), a folder of at most 60 MiB that runs
# every GPU check in one call on a lent machine (run-gpu-checks): the
# trainer and the test programs with the backends this build has, the
# non-CUDA shared libraries they link, a tiny dataset made by our own
# pipeline, the Python scripts.  `make test-gpu` builds it and runs it
# here, on a machine with a GPU.

OPS_COMPARE := $(BUILD)/tests/ops_compare
OPS_COMPARE_SRCS := $(wildcard tests/gpu/ops_compare*.c)
OPS_COMPARE_OBJS := $(OPS_COMPARE_SRCS:tests/gpu/%.c=$(BUILD)/tests/gpu/%.o)
$(OPS_COMPARE_OBJS): ALL_CFLAGS += $(TRAIN_CFLAGS)
# Linked as the unit tests of libtrain are, so it has the backends they
# have (the CUDA one in a CUDA build).
$(OPS_COMPARE): $(OPS_COMPARE_OBJS) $(LIBTRAIN) $(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS) \
		$(LIBDATA_LIBS) $(REQ_LIBS)
ALL_TARGETS += $(OPS_COMPARE)

GPU_BUNDLE := $(BUILD)/gpu-bundle
# What goes in it: the trainer, ops_compare, the PyTorch-parity suite's
# driver, generate and its conformance suite's driver, the NCCL
# communicator's test where this build has one, and the staged one's on
# the GPU (ranks sharing it).
GPU_BUNDLE_PROGS := $(TRAIN_TOOL) $(OPS_COMPARE) $(BUILD)/tests/drv_train \
	$(GENERATE) $(BUILD)/tests/drv_generate $(TEST_GPU_BIN) \
	$(TEST_STAGED_CUDA)
GPU_BUNDLE_TOOLS := $(BUILD)/segment $(BUILD)/json-pack \
	$(BUILD)/create-pretraining-data $(BUILD)/vocab-build
GPU_BUNDLE_FILES := scripts/gpu-bundle tests/gpu/run-gpu-checks \
	tests/gpu/speed.py tests/gpu/steps.py tests/gpu/gpt2-124M.json \
	tests/gpu/ernie-base.json configs/ernie-tiny.json configs/gpt-tiny.json \
	tests/conformance/train_torch_run.py tests/conformance/run.py \
	tests/conformance/oracles.py tests/conformance/generate_run.py

.PHONY: gpu-bundle test-gpu test-ops-compare test-gpu-bundle
gpu-bundle: $(GPU_BUNDLE)/BUNDLE
$(GPU_BUNDLE)/BUNDLE: $(GPU_BUNDLE_PROGS) $(GPU_BUNDLE_TOOLS) \
		$(GPU_BUNDLE_FILES)
	@echo '   BUNDLE  $(GPU_BUNDLE)'
	$(Q)PYTHON=$(PYTHON) scripts/gpu-bundle $(BUILD) $(DATA) $(GPU_BUNDLE) \
		$(GPU_BUNDLE_PROGS)

# On a machine with a GPU: every check of the bundle (the NCCL
# communicator's test among them, on one rank per GPU, where mpirun is).
test-gpu: gpu-bundle
	@n=$$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); \
	if [ "$$n" -lt 1 ]; then \
		echo "test-gpu: no GPU here (nvidia-smi -L lists none)"; exit 1; \
	fi; \
	PYTHON=$(PYTHON) $(GPU_BUNDLE)/run-gpu-checks

# make test: ops_compare's self-test, and the bundle checked here (it
# builds, its libraries resolve inside it or to the GPU machine's, its
# size, run-gpu-checks without a GPU, the speed script's formula).
test-ops-compare: $(OPS_COMPARE)
	@tests/run-suite $(TEST_LOG) ops-compare-self-test $(OPS_COMPARE) \
		--self-test

test-gpu-bundle: gpu-bundle $(VENV_STAMP)
	@BUILD=$(BUILD) SANITIZE=$(SANITIZE) tests/run-suite $(TEST_LOG) \
		gpu-bundle tests/gpu/run
