# SPDX-License-Identifier: MIT
# vocab/: the vocabulary builders (libvocab.a, C and one C++ shim over
# libsentencepiece) and vocab-build, whose subcommands are
# tools/vocab_build_*.c.

LIBVOCAB_SRCS := $(wildcard vocab/vocab_*.c)
LIBVOCAB_CXX_SRCS := $(wildcard vocab/vocab_*.cc)
LIBVOCAB_OBJS := $(LIBVOCAB_SRCS:%.c=$(BUILD)/%.o) \
	$(LIBVOCAB_CXX_SRCS:%.cc=$(BUILD)/%.o)
LIBVOCAB := $(BUILD)/libvocab.a
LIBVOCAB_LIBS := -lsentencepiece_train -lsentencepiece -lstdc++
VB_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tools/vocab_build_*.c))

CXX ?= g++
ALL_CXXFLAGS = -std=c++17 -D_GNU_SOURCE -pthread -MMD -MP -Ilibtok -Ivocab \
	-Wall -Wextra $(OPT_CFLAGS) $(CXXFLAGS)

$(BUILD)/vocab/%.o: vocab/%.cc
	@mkdir -p $(@D)
	$(QUIET_CC)$(CXX) $(ALL_CXXFLAGS) -c -o $@ $<

$(LIBVOCAB): $(LIBVOCAB_OBJS)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/vocab-build: $(BUILD)/tools/vocab-build.o $(VB_OBJS) $(CLI_OBJS) \
		$(LIBVOCAB) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(REQ_LIBS) $(LIBVOCAB_LIBS)

TOOLS += $(BUILD)/vocab-build
ALL_TARGETS += $(LIBVOCAB) $(BUILD)/vocab-build
