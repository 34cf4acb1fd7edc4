# SPDX-License-Identifier: MIT
# libtok: Unicode, the BERT basic tokenizer, WordPiece, vocab I/O.

LIBTOK_SRCS := $(wildcard libtok/tok_*.c)
LIBTOK_OBJS := $(LIBTOK_SRCS:%.c=$(BUILD)/%.o)
LIBTOK := $(BUILD)/libtok.a

$(LIBTOK): $(LIBTOK_OBJS)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

ALL_TARGETS += $(LIBTOK)

# The LAC engine's arithmetic is defined operation by operation (each sum a
# chain of fused multiply-adds, nothing else fused): no contraction, so the
# compiler cannot change a bit of it.
$(BUILD)/libtok/tok_lac_%.o: ALL_CFLAGS += -ffp-contract=off

# The jieba model, compiled at build time from Debian's python3-jieba.
JIEBA_DIR ?= /usr/lib/python3/dist-packages/jieba
JIEBA_MODEL := $(BUILD)/jieba.model

$(BUILD)/mkjieba: $(BUILD)/vocab/mkjieba.o $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(REQ_LIBS)

$(JIEBA_MODEL): $(BUILD)/mkjieba $(JIEBA_DIR)/dict.txt
	@echo '   MODEL   $@ (from $(JIEBA_DIR))'
	$(Q)$(BUILD)/mkjieba -d $(JIEBA_DIR)/dict.txt -m $(JIEBA_DIR)/finalseg -o $@

ALL_TARGETS += $(JIEBA_MODEL)

# The LAC model, compiled at build time from Baidu's LAC 2.1.2 source
# archive on PyPI (Apache-2.0; pip download, pinned by its SHA-256 in
# vocab/lac-archive.txt), or, offline, from a copy of that archive given as
# `make LAC_ARCHIVE=/path/LAC-2.1.2.tar.gz` (its SHA-256 is checked the
# same).  Nothing of LAC is in the tree; the model ships with the licence
# text it is under (lac.model.LICENSE).  `make WITH_LAC=0` builds without
# it (segment --engine lac then says where the model would be).
WITH_LAC ?= 1
LAC_ARCHIVE ?=
LAC_SHA256 := $(shell sed -n 's/.*--hash=sha256:\([0-9a-f]*\).*/\1/p' \
	vocab/lac-archive.txt)
LAC_DIR := build/lac
LAC_TARBALL := $(LAC_DIR)/LAC-2.1.2.tar.gz
LAC_MODEL := $(BUILD)/lac.model
LAC_LICENSE := $(BUILD)/lac.model.LICENSE
APACHE_LICENSE ?= /usr/share/common-licenses/Apache-2.0

$(BUILD)/mklac: $(BUILD)/vocab/mklac.o $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(REQ_LIBS)

# The archive: a given copy, or pip's download; either way its SHA-256 must
# be the pinned one.
$(LAC_TARBALL): vocab/lac-archive.txt
	@mkdir -p $(@D)
	@echo '   FETCH   $@ ($(if $(LAC_ARCHIVE),from $(LAC_ARCHIVE),PyPI))'
	$(Q)rm -f $@ $@.tmp
ifneq ($(LAC_ARCHIVE),)
	$(Q)cp '$(LAC_ARCHIVE)' $@.tmp
else
	$(Q)$(PYTHON) -m pip download -q --disable-pip-version-check --no-deps \
		--no-binary :all: --no-build-isolation --require-hashes \
		-r vocab/lac-archive.txt -d $(@D)/dl || { \
		echo 'cannot download LAC 2.1.2 from PyPI: give a copy of' \
		'LAC-2.1.2.tar.gz as LAC_ARCHIVE=path, or build without LAC:' \
		'make WITH_LAC=0' >&2; exit 1; }
	$(Q)mv $(@D)/dl/LAC-2.1.2.tar.gz $@.tmp && rmdir $(@D)/dl
endif
	$(Q)echo '$(LAC_SHA256)  $@.tmp' | sha256sum -c --quiet - || { \
		echo '$@: not the LAC 2.1.2 archive (SHA-256 differs from' \
		'vocab/lac-archive.txt)' >&2; rm -f $@.tmp; exit 1; }
	$(Q)mv $@.tmp $@

# Only the two networks' directories are unpacked, into a temporary
# directory that goes once the model is written.
$(LAC_MODEL): $(BUILD)/mklac $(LAC_TARBALL)
	@echo '   MODEL   $@ (from LAC 2.1.2)'
	$(Q)rm -rf $@.src && mkdir -p $@.src
	$(Q)tar -xzf $(LAC_TARBALL) -C $@.src LAC-2.1.2/LAC/seg_model \
		LAC-2.1.2/LAC/lac_model
	$(Q)$(BUILD)/mklac -d $@.src/LAC-2.1.2/LAC -o $@ -p "Baidu LAC 2.1.2\
	(https://github.com/baidu/lac), PyPI LAC-2.1.2.tar.gz sha256:$(LAC_SHA256),\
	Apache License 2.0" || { rm -rf $@.src; exit 1; }
	$(Q)rm -rf $@.src

$(LAC_LICENSE): $(APACHE_LICENSE) mk/libtok.mk
	@mkdir -p $(@D)
	$(Q){ echo 'lac.model is derived from Baidu LAC 2.1.2'; \
		echo '(https://github.com/baidu/lac; PyPI: LAC-2.1.2.tar.gz,'; \
		echo 'sha256 $(LAC_SHA256)),'; \
		echo 'Copyright (c) 2020 Baidu, Inc. All Rights Reserved,'; \
		echo 'licensed under the Apache License, Version 2.0, below.'; \
		echo 'erniekit compiled its seg and lac networks and their'; \
		echo 'dictionaries into one file (vocab/mklac.c, lac-model(5)):'; \
		echo 'the parameters are those of LAC, the first projections of'; \
		echo 'the seg network precomputed from them.'; echo; \
		cat $(APACHE_LICENSE); } > $@

ifeq ($(WITH_LAC),1)
ALL_TARGETS += $(LAC_MODEL) $(LAC_LICENSE)
endif
