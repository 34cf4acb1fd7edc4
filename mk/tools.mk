# SPDX-License-Identifier: MIT
# tools/: one .c per command, thin over the libraries; cli*.c are shared.

TOOL_NAMES := tokenize segment json-pack create-pretraining-data \
	merge dataset-inspect checkpoint-export
TOOLS := $(TOOL_NAMES:%=$(BUILD)/%)
CLI_OBJS := $(BUILD)/tools/cli.o $(BUILD)/tools/cli_input.o \
	$(BUILD)/tools/cli_pipeline.o $(BUILD)/tools/cli_json.o \
	$(BUILD)/tools/cli_files.o $(BUILD)/tools/cli_icu.o \
	$(BUILD)/tools/cli_path.o

# create-pretraining-data writes through libdata; its whole-word marks are
# in wwm.c.  (ICU, for sentence breaks, is loaded at run time: cli_icu.c.)
$(BUILD)/create-pretraining-data: $(BUILD)/tools/wwm.o $(LIBDATA)
$(BUILD)/create-pretraining-data: TOOL_LIBS := $(LIBDATA_LIBS)

# merge and dataset-inspect read (and merge writes) through libdata.
$(BUILD)/merge $(BUILD)/dataset-inspect: $(LIBDATA)
$(BUILD)/merge $(BUILD)/dataset-inspect: TOOL_LIBS := $(LIBDATA_LIBS)

# checkpoint-export reads checkpoints and writes PaddleNLP's files through
# libtrain (train/ckpt/paddle_export.c); libtok again after it, which
# libtrain uses.
$(BUILD)/checkpoint-export: $(LIBTRAIN) $(LIBDATA)
$(BUILD)/checkpoint-export: TOOL_LIBS := $(LIBTOK) $(LIBTRAIN_LIBS) \
	$(LIBDATA_LIBS)
$(BUILD)/tools/checkpoint-export.o: ALL_CFLAGS += -Itrain

$(BUILD)/%: $(BUILD)/tools/%.o $(CLI_OBJS) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(REQ_LIBS) $(TOOL_LIBS)

# The installed programs find each other and their data by the relative
# paths between BINDIR, TOOLDIR and DATADIR (cli_path.c), which do not
# change with PREFIX; $(BUILD)/install-paths holds them, rewritten when
# they change, so that cli_path.o is rebuilt then.
TOOLDIR_REL := $(shell realpath -m -s --relative-to=$(BINDIR) $(TOOLDIR))
DATADIR_REL := $(shell realpath -m -s --relative-to=$(TOOLDIR) $(DATADIR))
$(BUILD)/install-paths: FORCE
	@mkdir -p $(@D)
	@echo '$(TOOLDIR_REL) $(DATADIR_REL)' | cmp -s - $@ || \
		echo '$(TOOLDIR_REL) $(DATADIR_REL)' > $@
$(BUILD)/tools/cli_path.o: $(BUILD)/install-paths
$(BUILD)/tools/cli_path.o: ALL_CFLAGS += \
	-DERNIEKIT_TOOLDIR_REL='"$(TOOLDIR_REL)"' \
	-DERNIEKIT_DATADIR_REL='"$(DATADIR_REL)"'

# The front command, installed alone in BINDIR: `erniekit segment ...`
# runs TOOLDIR/segment.  It needs only libc.
FRONT := $(BUILD)/erniekit
$(FRONT): $(BUILD)/tools/erniekit.o $(BUILD)/tools/cli_path.o
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^

ALL_TARGETS += $(TOOLS) $(FRONT)
