# SPDX-License-Identifier: MIT
# libtok: Unicode, the BERT basic tokenizer, WordPiece, vocab I/O.

LIBTOK_SRCS := $(wildcard libtok/tok_*.c)
LIBTOK_OBJS := $(LIBTOK_SRCS:%.c=$(BUILD)/%.o)
LIBTOK := $(BUILD)/libtok.a

$(LIBTOK): $(LIBTOK_OBJS)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

ALL_TARGETS += $(LIBTOK)
