# SPDX-License-Identifier: MIT
# tools/: one .c per command, thin over the libraries; cli.c is shared.

TOOL_NAMES := tokenize
TOOLS := $(TOOL_NAMES:%=$(BUILD)/%)
CLI_OBJS := $(BUILD)/tools/cli.o $(BUILD)/tools/cli_input.o \
	$(BUILD)/tools/cli_pipeline.o

$(BUILD)/%: $(BUILD)/tools/%.o $(CLI_OBJS) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(REQ_LIBS)

ALL_TARGETS += $(TOOLS)
