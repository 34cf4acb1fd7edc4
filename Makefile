# SPDX-License-Identifier: MIT
# The one Makefile of the project: non-recursive; each module adds a fragment
# from mk/.  `make help` lists the targets and knobs.

PROJECT := erniekit
VERSION := 0.1.0

.DEFAULT_GOAL := all
.SUFFIXES:
.DELETE_ON_ERROR:
.SECONDARY:

# ---------------------------------------------------------------- knobs
CC ?= cc
NVCC ?= nvcc
PYTHON ?= /usr/bin/python3
INSTALL ?= install
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share/$(PROJECT)
# The commands, run by the front command $(BINDIR)/erniekit.
TOOLDIR = $(LIBEXECDIR)/$(PROJECT)
DESTDIR ?=
SANITIZE ?=
DEVELOPER ?=
DATA ?= ../shared/data

# Build directory per mode, so a sanitizer build never mixes with -O2 objects.
ifeq ($(SANITIZE),)
BUILD ?= build
OPT_CFLAGS := -O2 -g
OPT_LDFLAGS :=
else
BUILD ?= build-san
OPT_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=$(SANITIZE) \
	-fno-sanitize-recover=all
OPT_LDFLAGS := -fsanitize=$(SANITIZE)
endif

WARN_CFLAGS := -Wall -Wextra -Wformat=2 -Wvla
ifneq ($(DEVELOPER),)
WARN_CFLAGS += -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
endif

# Required flags live apart from CFLAGS, so `make CFLAGS=-O0` keeps them.
PROJECT_CFLAGS := -std=c11 -D_GNU_SOURCE -pthread -MMD -MP \
	-Ilibtok -Ilibdata -Ivocab -Itools $(WARN_CFLAGS)
ALL_CFLAGS = $(PROJECT_CFLAGS) $(OPT_CFLAGS) \
	-DPROJECT_NAME='"$(PROJECT)"' -DPROJECT_VERSION='"$(VERSION)"' \
	$(CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS = -pthread $(OPT_LDFLAGS) $(LDFLAGS)
REQ_LIBS := -lutf8proc -lpcre2-8 -lzstd -ljson-c -lm

# V=1 shows the commands.
ifeq ($(V),1)
Q :=
QUIET_CC =
QUIET_AR =
QUIET_LINK =
else
Q := @
QUIET_CC = @echo '   CC      $@';
QUIET_AR = @echo '   AR      $@';
QUIET_LINK = @echo '   LINK    $@';
endif

include mk/config.mk
include mk/libtok.mk
include mk/libdata.mk
include mk/train.mk
include mk/cuda.mk
include mk/tools.mk
include mk/generate.mk
include mk/vocab.mk
include mk/tests.mk
include mk/gpu.mk
include mk/docs.mk
include mk/pgo.mk
include mk/fuzz.mk

# ---------------------------------------------------------------- rules
$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) -c -o $@ $<

.PHONY: all
all: $(ALL_TARGETS)

.PHONY: deps
deps:
	@scripts/install-deps --check >/dev/null 2>&1 || scripts/install-deps

# The quick start: `make demo` installs what it needs, builds, and runs the
# main job on the bundled sample.
.PHONY: demo
demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh $(BUILD) $(DATA)

# `make train` runs the trainer with a config file (default: a tiny ERNIE on
# the demo's data, so `make demo` first), on NP ranks through mpirun; e.g.
#   make train CONFIG=configs/gpt-demo.json TRAIN_ARGS='--max_steps 100'
#   make train NP=2 MPIRUN_FLAGS='--hostfile hosts'
# (TRAIN_CONFIG is the older name of CONFIG.)  See docs/parallel.md.
TRAIN_CONFIG ?= configs/ernie-demo.json
CONFIG ?= $(TRAIN_CONFIG)
TRAIN_ARGS ?=
NP ?= 1
MPIRUN ?= mpirun
MPIRUN_FLAGS ?=
.PHONY: train
train: all
ifeq ($(NP),1)
	$(BUILD)/train --config $(CONFIG) $(TRAIN_ARGS)
else
	@# Open MPI refuses root without these (containers run as root).
	$(if $(filter 0,$(shell id -u)),OMPI_ALLOW_RUN_AS_ROOT=1 \
		OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1) \
		$(MPIRUN) -np $(NP) $(MPIRUN_FLAGS) $(BUILD)/train \
		--config $(CONFIG) $(TRAIN_ARGS)
endif

# `make install` puts one command in BINDIR, erniekit (git-style:
# `erniekit segment ...`), and the programs it runs in TOOLDIR, so the
# generic names (train, merge, segment) stay out of PATH.  The programs find
# each other and their data relative to where they are (tools/cli_path.c),
# so the installed tree works under any PREFIX or DESTDIR.
.PHONY: install
install: all
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(TOOLDIR) \
		$(DESTDIR)$(DATADIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(MANDIR)/man5
	$(INSTALL) -m 755 $(FRONT) $(DESTDIR)$(BINDIR)
	$(INSTALL) -m 755 $(TOOLS) $(TRAIN_TOOL) $(DESTDIR)$(TOOLDIR)
	$(INSTALL) -m 644 $(LIBTOK) $(DESTDIR)$(LIBDIR)
	$(INSTALL) -m 644 libtok/tok.h $(DESTDIR)$(INCLUDEDIR)
	$(INSTALL) -m 644 $(JIEBA_MODEL) $(DESTDIR)$(DATADIR)
	@# Drop the installed model from the page cache (GNU dd's nocache):
	@# read in again through the segmenter's mapping, it is cached in
	@# 2 MB folios its table is mapped by (jieba-model(5)).
	-@sync $(DESTDIR)$(DATADIR)/jieba.model && \
		dd if=$(DESTDIR)$(DATADIR)/jieba.model iflag=nocache count=0 \
		status=none
	$(if $(filter 1,$(WITH_LAC)),$(INSTALL) -m 644 $(LAC_MODEL) \
		$(LAC_LICENSE) $(DESTDIR)$(DATADIR))
	$(INSTALL) -m 644 $(INST_MAN1) $(DESTDIR)$(MANDIR)/man1
	$(if $(INST_MAN3),$(INSTALL) -m 644 $(INST_MAN3) $(DESTDIR)$(MANDIR)/man3)
	$(if $(INST_MAN5),$(INSTALL) -m 644 $(INST_MAN5) $(DESTDIR)$(MANDIR)/man5)

# Removes what install put there, and the directories that are the
# project's own (TOOLDIR, DATADIR) once empty.
.PHONY: uninstall
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/$(notdir $(FRONT))
	rm -f $(addprefix $(DESTDIR)$(TOOLDIR)/,$(notdir $(TOOLS) $(TRAIN_TOOL)))
	rm -f $(DESTDIR)$(LIBDIR)/$(notdir $(LIBTOK))
	rm -f $(DESTDIR)$(INCLUDEDIR)/tok.h
	rm -f $(DESTDIR)$(DATADIR)/jieba.model $(DESTDIR)$(DATADIR)/lac.model \
		$(DESTDIR)$(DATADIR)/lac.model.LICENSE
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(INST_MAN1)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(INST_MAN3)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man5/,$(notdir $(INST_MAN5)))
	for d in $(DESTDIR)$(TOOLDIR) $(DESTDIR)$(DATADIR); do \
		[ ! -d "$$d" ] || rmdir --ignore-fail-on-non-empty "$$d"; \
	done

.PHONY: FORCE
FORCE:

.PHONY: clean
clean:
	rm -rf build build-san build-fuzz build-pgo

.PHONY: help
help:
	@echo 'Targets:'
	@echo '  all        libtok.a, the tools, the front command erniekit'
	@echo '             and the pages to install (default)'
	@echo '  demo       install deps, build, run the bundled sample end to end'
	@echo '  test       install deps, build, run unit, CLI, fuzz-corpus and'
	@echo '             conformance tests; last line "all: N passed, N failed"'
	@echo '  check      test + the whole suite again under ASan/UBSan'
	@echo '             (build-san/) + mandoc -Tlint + clang-format check'
	@echo '  test-cluster  the cluster recipes through a one-node Slurm it'
	@echo '             starts here (root; tests/cluster/run; run by CI)'
	@echo '  bench      time the tools against their peers (bench/*.sh; each'
	@echo '             script also runs alone and builds what it needs)'
	@echo '  cuda       the CUDA backend (build/libtrain_cuda.a, where make'
	@echo '             config finds CUDA, cuBLASLt and cuDNN 9; part of all)'
	@echo '             and its unit test; CUDA_ARCH=$(CUDA_ARCH)'
	@echo '  gpu-bundle build/gpu-bundle: the GPU checks in one folder for a'
	@echo '             machine with a GPU (tests/gpu/README.md); test-gpu'
	@echo '             builds and runs it here, on a machine with a GPU'
	@echo '  fuzz       libFuzzer targets with clang (build-fuzz/)'
	@echo '  fuzz-run   build them and run each for FUZZ_TIME seconds'
	@echo '             (default 60) on all cores (FUZZ_JOBS) on a scratch'
	@echo '             copy of its corpus; findings go to testdata/fuzz/'
	@echo '             (scripts/fuzz-run; FUZZ_TARGETS: some only)'
	@echo '  pgo        the preprocessing tools with profile-guided'
	@echo '             optimization (build-pgo/, trained on $$(DATA));'
	@echo '             test-pgo checks their output against build/'
	@echo '  format     rewrite sources with clang-format'
	@echo '  install    to $$(DESTDIR)$$(PREFIX): bin/erniekit, the one command'
	@echo '             (erniekit segment ...; erniekit --help lists them),'
	@echo '             the tools in libexec/erniekit, the models in'
	@echo '             share/erniekit, libtok, man pages (erniekit(1),'
	@echo '             erniekit-segment(1), ...); uninstall removes them'
	@echo '  clean      remove build directories'
	@echo 'Knobs: PREFIX=$(PREFIX) DESTDIR= V=1 SANITIZE=address,undefined'
	@echo '       WITH_LAC=$(WITH_LAC) (0: no lac.model) LAC_ARCHIVE=path'
	@echo '       (an offline copy of LAC-2.1.2.tar.gz) LAC_PYTHON=python3.8'
	@echo '       DEVELOPER=1 CC=$(CC) DATA=$(DATA) PYTHON=$(PYTHON)'
	@echo '       BINDIR LIBEXECDIR DATADIR LIBDIR INCLUDEDIR MANDIR'
	@echo 'Detected (cached in $(BUILD)/config.mk, probed again when the'
	@echo 'compilers or packages change; make reconfigure to redo):'
	@echo '  HAVE_OPENMP=$(HAVE_OPENMP) HAVE_CUDA=$(HAVE_CUDA)' \
		'HAVE_CUBLAS=$(HAVE_CUBLAS) HAVE_CUDNN=$(HAVE_CUDNN)' \
		'HAVE_NCCL=$(HAVE_NCCL) HAVE_MPI=$(HAVE_MPI)'
	@echo '  HAVE_CUDA_BACKEND=$(HAVE_CUDA_BACKEND) (CUDA, cuBLASLt and cuDNN 9)'

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
