# SPDX-License-Identifier: MIT
# libtok: Unicode, the BERT basic tokenizer, WordPiece, vocab I/O.

LIBTOK_SRCS := $(wildcard libtok/tok_*.c)
LIBTOK_OBJS := $(LIBTOK_SRCS:%.c=$(BUILD)/%.o)
LIBTOK := $(BUILD)/libtok.a

$(LIBTOK): $(LIBTOK_OBJS)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

ALL_TARGETS += $(LIBTOK)

# The jieba model, compiled at build time from Debian's python3-jieba.
JIEBA_DIR ?= /usr/lib/python3/dist-packages/jieba
JIEBA_MODEL := $(BUILD)/jieba.model

$(BUILD)/mkjieba: $(BUILD)/vocab/mkjieba.o $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(REQ_LIBS)

$(JIEBA_MODEL): $(BUILD)/mkjieba $(JIEBA_DIR)/dict.txt
	@echo '   MODEL   $@ (from $(JIEBA_DIR))'
	$(Q)$(BUILD)/mkjieba -d $(JIEBA_DIR)/dict.txt -m $(JIEBA_DIR)/finalseg -o $@

ALL_TARGETS += $(JIEBA_MODEL)
