# SPDX-License-Identifier: MIT
# tools/: one .c per command, thin over the libraries; cli*.c are shared.

TOOL_NAMES := tokenize segment json-pack create-pretraining-data \
	merge dataset-inspect
TOOLS := $(TOOL_NAMES:%=$(BUILD)/%)
CLI_OBJS := $(BUILD)/tools/cli.o $(BUILD)/tools/cli_input.o \
	$(BUILD)/tools/cli_pipeline.o $(BUILD)/tools/cli_json.o \
	$(BUILD)/tools/cli_files.o $(BUILD)/tools/cli_icu.o

# create-pretraining-data writes through libdata; its whole-word marks are
# in wwm.c.  (ICU, for sentence breaks, is loaded at run time: cli_icu.c.)
$(BUILD)/create-pretraining-data: $(BUILD)/tools/wwm.o $(LIBDATA)
$(BUILD)/create-pretraining-data: TOOL_LIBS := $(LIBDATA_LIBS)

# merge and dataset-inspect read (and merge writes) through libdata.
$(BUILD)/merge $(BUILD)/dataset-inspect: $(LIBDATA)
$(BUILD)/merge $(BUILD)/dataset-inspect: TOOL_LIBS := $(LIBDATA_LIBS)

# segment knows where the installed model lives.
$(BUILD)/tools/cli.o $(BUILD)/tools/segment.o: ALL_CFLAGS += \
	-DDATADIR='"$(DATADIR)"'

$(BUILD)/%: $(BUILD)/tools/%.o $(CLI_OBJS) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(REQ_LIBS) $(TOOL_LIBS)

ALL_TARGETS += $(TOOLS)
