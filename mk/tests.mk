# SPDX-License-Identifier: MIT
# Tests: unit binaries (tests/unit), CLI cases (tests/cli), the fuzz corpus
# replay (tests/fuzz), and conformance against the reference tokenizers
# (tests/conformance, in a Python venv with pinned packages).  Each suite
# prints "<suite>: N passed, N failed, N skipped"; tests/summarize adds
# them up into the last line of `make test`.

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_REPLAY := $(FUZZ_SRCS:tests/fuzz/fuzz_%.c=$(BUILD)/tests/replay_%)
VENV := build/venv
VENV_STAMP := $(VENV)/.installed
TEST_LOG := $(BUILD)/test.log

$(BUILD)/tests/test_%: $(BUILD)/tests/unit/test_%.o $(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBDATA_LIBS) $(REQ_LIBS)

$(BUILD)/tests/replay_%: $(BUILD)/tests/fuzz/fuzz_%.o \
		$(BUILD)/tests/fuzz/fuzz_replay.o $(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBDATA_LIBS) $(REQ_LIBS)

# The marking of create-pretraining-data and the tools' JSONL field reader
# live with the tools.
$(BUILD)/tests/replay_wwm: $(BUILD)/tools/wwm.o
$(BUILD)/tests/replay_json: $(BUILD)/tools/cli_json.o
# generate's input reader, over the tools' common code.
$(BUILD)/tests/replay_gen_prompts: $(BUILD)/tests/fuzz/fuzz_gen_prompts.o \
		$(BUILD)/tests/fuzz/fuzz_replay.o $(BUILD)/tools/gen_reader.o \
		$(CLI_OBJS) $(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBDATA_LIBS) $(REQ_LIBS)

$(BUILD)/tests/fuzz/fuzz_replay.o: tests/fuzz/replay.c
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) -c -o $@ $<

TEST_BINS := $(UNIT_BINS) $(FUZZ_REPLAY)

# The oracles' virtual environment: Debian's Python (it sees apt packages)
# plus the pinned PyPI packages of tests/conformance/requirements.txt.
$(VENV_STAMP): tests/conformance/requirements.txt
	@echo '   VENV    $(VENV) (reference tokenizers, once)'
	$(Q)rm -rf $(VENV) && $(PYTHON) -m venv --system-site-packages $(VENV)
	$(Q)$(VENV)/bin/pip install -q --disable-pip-version-check \
		-r tests/conformance/requirements.txt
	$(Q)touch $@

.PHONY: venv test test-unit test-cli test-fuzz test-conformance test-segment \
	test-cpd test-bpe test-vocab test-samples test-train test-install check \
	test-cluster
venv: $(VENV_STAMP)

test: deps
	@$(MAKE) --no-print-directory all $(TEST_BINS) $(VENV_STAMP)
	@$(MAKE) --no-print-directory -k test-run; \
	tests/summarize $(TEST_LOG)

test-run: test-unit test-cli test-fuzz test-conformance test-segment test-cpd \
	test-megatron test-bpe test-vocab test-samples test-train test-generate \
	test-install test-ops-compare test-gpu-bundle $(if $(filter 1,$(WITH_LAC)),test-lac)

test-unit: $(UNIT_BINS) $(if $(filter 1,$(WITH_LAC)),$(LAC_MODEL))
	@rm -f $(TEST_LOG)
	@for t in $(UNIT_BINS); do \
		DATA=$(DATA) LAC_MODEL=$(LAC_MODEL) \
			tests/run-suite $(TEST_LOG) $${t##*/} $$t; \
	done

test-cli: $(TOOLS)
	@BUILD=$(BUILD) DATA=$(DATA) tests/run-suite $(TEST_LOG) cli tests/cli/run

test-fuzz: $(FUZZ_REPLAY) $(JIEBA_MODEL)
	@export JIEBA_MODEL=$(JIEBA_MODEL) JIEBA_HMM_DIR=$(JIEBA_DIR)/finalseg; \
	for t in $(FUZZ_REPLAY); do \
		n=$${t##*/replay_}; \
		tests/run-suite $(TEST_LOG) replay_$$n $$t testdata/fuzz/$$n; \
	done

test-conformance: $(TOOLS) $(VENV_STAMP)
	@tests/run-suite $(TEST_LOG) conformance \
		$(VENV)/bin/python tests/conformance/run.py \
		--tokenize $(BUILD)/tokenize --data $(DATA) \
		--cache build/oracle-cache

# tokenize -F gpt2-bpe against HF tokenizers' ByteLevelBPETokenizer, with
# models trained by HF during the run.
test-bpe: $(BUILD)/tokenize $(VENV_STAMP)
	@tests/run-suite $(TEST_LOG) bpe-conformance \
		$(VENV)/bin/python tests/conformance/bpe_run.py \
		--tokenize $(BUILD)/tokenize --data $(DATA)

# segment against the real jieba: Debian's python3-jieba, seen by Debian's
# Python (not the venv, whose PyPI jieba would shadow it).
test-segment: $(TOOLS) $(JIEBA_MODEL) $(BUILD)/tests/drv_jieba
	@tests/run-suite $(TEST_LOG) segment-conformance \
		/usr/bin/python3 tests/conformance/segment_run.py \
		--segment $(BUILD)/segment --json-pack $(BUILD)/json-pack \
		--drv-jieba $(BUILD)/tests/drv_jieba --model $(JIEBA_MODEL) \
		--data $(DATA)

# create-pretraining-data and merge against PaddleNLP's tokenizer and
# indexed_dataset builder (byte-identical .bin/.idx), in the venv.
test-cpd: $(TOOLS) $(JIEBA_MODEL) $(VENV_STAMP)
	@tests/run-suite $(TEST_LOG) cpd-conformance \
		$(VENV)/bin/python tests/conformance/cpd_run.py \
		--tool $(BUILD)/create-pretraining-data --merge $(BUILD)/merge \
		--data $(DATA) --cache build/oracle-cache

# create-pretraining-data --keep-whitespace against Megatron-Core's
# GPT2BPETokenizer and IndexedDatasetBuilder (byte-identical .bin/.idx),
# in a venv of its own: Megatron-Core needs a newer torch than Debian's.
MEGATRON_VENV := build/megatron-venv
MEGATRON_STAMP := $(MEGATRON_VENV)/.installed
$(MEGATRON_STAMP): tests/conformance/megatron-requirements.txt
	@echo '   VENV    $(MEGATRON_VENV) (Megatron-Core and torch, once)'
	$(Q)rm -rf $(MEGATRON_VENV) && $(PYTHON) -m venv $(MEGATRON_VENV)
	$(Q)$(MEGATRON_VENV)/bin/pip install -q --disable-pip-version-check \
		-r tests/conformance/megatron-requirements.txt
	$(Q)touch $@

# The LAC engine against Baidu LAC 2.1.2 itself (word for word, tag for
# tag, every difference a measured near tie), and segment and
# create-pretraining-data with it, in a venv of its own: LAC needs
# paddle.fluid, gone from paddlepaddle 2.6, and PyPI's last paddlepaddle
# with it (1.8.5) is for CPython 3.6-3.8: pyenv's 3.8.18.  Its results are
# cached under build/oracle-cache.
LAC_VENV := build/lac-venv
LAC_VENV_STAMP := $(LAC_VENV)/.installed
PYENV_ROOT_DIR := $(shell pyenv root 2>/dev/null || echo $(HOME)/.pyenv)
LAC_PYTHON ?= $(PYENV_ROOT_DIR)/versions/3.8.18/bin/python
$(LAC_VENV_STAMP): tests/conformance/lac-requirements.txt
	@echo '   VENV    $(LAC_VENV) (LAC 2.1.2 on paddlepaddle 1.8.5, once)'
	$(Q)test -x $(LAC_PYTHON) || { echo 'no Python 3.8 at $(LAC_PYTHON):' \
		'pyenv install 3.8.18, or make LAC_PYTHON=/path/to/python3.8' >&2; \
		exit 1; }
	$(Q)rm -rf $(LAC_VENV) && $(LAC_PYTHON) -m venv $(LAC_VENV)
	$(Q)$(LAC_VENV)/bin/pip install -q --disable-pip-version-check \
		-r tests/conformance/lac-requirements.txt
	$(Q)touch $@

.PHONY: lac-venv test-lac
lac-venv: $(LAC_VENV_STAMP)

test-lac: $(TOOLS) $(LAC_MODEL) $(BUILD)/tests/drv_lac $(LAC_VENV_STAMP) \
		$(VENV_STAMP)
	@tests/run-suite $(TEST_LOG) lac-conformance \
		$(VENV)/bin/python tests/conformance/lac_run.py \
		--drv $(BUILD)/tests/drv_lac --segment $(BUILD)/segment \
		--cpd $(BUILD)/create-pretraining-data --model $(LAC_MODEL) \
		--lac-python $(LAC_VENV)/bin/python --archive $(LAC_TARBALL) \
		--data $(DATA) --cache build/oracle-cache

.PHONY: megatron-venv test-megatron
megatron-venv: $(MEGATRON_STAMP)

test-megatron: $(BUILD)/create-pretraining-data $(BUILD)/vocab-build \
		$(MEGATRON_STAMP)
	@tests/run-suite $(TEST_LOG) megatron-conformance \
		$(MEGATRON_VENV)/bin/python tests/conformance/megatron_run.py \
		--tool $(BUILD)/create-pretraining-data \
		--vocab-build $(BUILD)/vocab-build --data $(DATA)

# vocab-build against the seed's recipe (its merge rules driven with
# PaddleNLP's BasicTokenizer, Debian's spm_train) and HF's BpeTrainer.
VOCAB_SUITES := merge english bpe
test-vocab: $(BUILD)/vocab-build $(VENV_STAMP)
	@for s in $(VOCAB_SUITES); do \
		tests/run-suite $(TEST_LOG) vocab-$$s-conformance \
			$(VENV)/bin/python tests/conformance/vocab_$${s}_run.py \
			--vocab-build $(BUILD)/vocab-build --data $(DATA) \
			--cache build/oracle-cache; \
	done

# The training-sample layer of libdata against its references (numpy's
# RandomState, PaddleNLP's tool_helpers and causal_dataset, the spec's
# vectors), through small driver programs tests/drivers/drv_*.c.
DRV_SRCS := $(wildcard tests/drivers/drv_*.c)
DRV_BINS := $(DRV_SRCS:tests/drivers/%.c=$(BUILD)/tests/%)
SAMPLES_SUITES := $(patsubst tests/conformance/samples_%_run.py,%,\
	$(wildcard tests/conformance/samples_*_run.py))

$(BUILD)/tests/drv_%: $(BUILD)/tests/drivers/drv_%.o $(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBDATA_LIBS) $(REQ_LIBS)

test-samples: $(DRV_BINS) $(TOOLS) $(VENV_STAMP)
	@for s in $(SAMPLES_SUITES); do \
		tests/run-suite $(TEST_LOG) samples-$$s-conformance \
			$(VENV)/bin/python tests/conformance/samples_$${s}_run.py \
			--build $(BUILD) --data $(DATA) --cache build/oracle-cache; \
	done

# The trainer: its model and optimizer against PyTorch (transformers'
# ErnieForPreTraining and GPT2LMHeadModel on Debian's torch), then whole
# runs of `train` (the loss falls, kill and resume, determinism, errors),
# then several ranks under mpirun and the TCP rendezvous (data parallel =
# one rank, resume across layouts, dead and hung ranks, the communicators
# through host memory).
test-train: $(TRAIN_TOOL) $(BUILD)/tests/drv_train \
		$(BUILD)/tests/test_comm_mpi $(BUILD)/tests/test_comm_tcp \
		$(BUILD)/tests/test_comm_staged $(TOOLS) $(BUILD)/vocab-build \
		$(VENV_STAMP)
	@tests/run-suite $(TEST_LOG) train-torch-conformance \
		$(VENV)/bin/python tests/conformance/train_torch_run.py $(BUILD)
	@BUILD=$(BUILD) DATA=$(DATA) tests/run-suite $(TEST_LOG) train \
		tests/train/run
	@BUILD=$(BUILD) DATA=$(DATA) tests/run-suite $(TEST_LOG) train-parallel \
		tests/train/parallel

# The cluster recipes through a real one-node Slurm on this machine
# (tests/cluster/run: root, slurm-wlm and munge from scripts/install-deps):
# preprocessing as an array job, training under srun with and without
# MPI, dead and hung ranks.  Not part of `make test` (it starts daemons);
# CI runs it after make check.
test-cluster: $(TRAIN_TOOL) $(TOOLS) $(BUILD)/vocab-build \
		$(BUILD)/tests/test_comm_tcp $(BUILD)/tests/test_comm_mpi \
		$(VENV_STAMP)
	@rm -f $(BUILD)/test-cluster.log
	@BUILD=$(BUILD) DATA=$(DATA) tests/run-suite $(BUILD)/test-cluster.log \
		cluster tests/cluster/run
	@tests/summarize $(BUILD)/test-cluster.log

# Install and build: the feature probe redone when the compilers or the
# packages change, `make install` under a PREFIX and a DESTDIR run through
# the front command erniekit, its man pages, `make uninstall`, and the bench
# scripts building what they run (tests/install/run).
test-install: all
	@BUILD=$(BUILD) DATA=$(DATA) SANITIZE=$(SANITIZE) tests/run-suite \
		$(TEST_LOG) install tests/install/run

# check = the whole suite again under ASan/UBSan, man page lint, format.
# Allocation failure is tested (an impossible buffer comes back NULL with a
# message naming it), which ASan would otherwise turn into an abort.
CHECK_ASAN_OPTIONS += allocator_may_return_null=1
space := $(subst ,, )
check: export ASAN_OPTIONS := $(subst $(space),:,$(strip $(CHECK_ASAN_OPTIONS)))$(if $(ASAN_OPTIONS),:$(ASAN_OPTIONS))
check: deps
	@$(MAKE) --no-print-directory SANITIZE=address,undefined test
	@$(MAKE) --no-print-directory man-lint format-check

# The benchmarks' venv: the oracles' plus the peers of bench/requirements.txt.
# Each bench script builds what it runs (bench/lib.sh's bench_setup), so it
# can also be run on its own.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): bench/requirements.txt $(VENV_STAMP)
	@echo '   VENV    $(VENV) + bench/requirements.txt (the peers)'
	$(Q)$(VENV)/bin/pip install -q --disable-pip-version-check \
		-r bench/requirements.txt
	$(Q)touch $@

.PHONY: bench bench-venv
bench-venv: $(BENCH_STAMP)

bench: all bench-venv
	@bench/tokenize.sh $(BUILD) $(DATA)
	@bench/segment.sh $(BUILD) $(DATA)
	$(if $(filter 1,$(WITH_LAC)),@bench/segment_lac.sh $(BUILD) $(DATA))
	@bench/create_pretraining_data.sh $(BUILD) $(DATA)
	@bench/vocab_build.sh $(BUILD) $(DATA)
	@bench/samples.sh $(BUILD) $(DATA)
	@bench/train_cpu.sh $(BUILD) $(DATA)
	@bench/train_dp.sh $(BUILD) $(DATA)
	@bench/generate.sh $(BUILD) $(DATA)
	@/usr/bin/python3 bench/pku_fscore.py $(BUILD) $(DATA)
