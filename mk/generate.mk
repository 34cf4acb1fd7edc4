# SPDX-License-Identifier: MIT
# The generate command (tools/generate.c, gen_text.c, gen_mask.c): text from
# GPT checkpoints and ERNIE's fill-mask, over libtrain's generate/
# (train/generate/).  It links libtrain (with the CUDA backend where it is
# built), so --device cuda runs the same ops as train.  Included after
# mk/train.mk, mk/cuda.mk and mk/tools.mk.

GENERATE := $(BUILD)/generate
GENERATE_OBJS := $(BUILD)/tools/generate.o $(BUILD)/tools/gen_text.o \
	$(BUILD)/tools/gen_mask.o $(BUILD)/tools/gen_reader.o

$(GENERATE_OBJS): ALL_CFLAGS += $(TRAIN_CFLAGS)
$(GENERATE): $(GENERATE_OBJS) $(CLI_OBJS) $(LIBTRAIN) $(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS) \
		$(LIBDATA_LIBS) $(REQ_LIBS)

TOOLS += $(GENERATE)
ALL_TARGETS += $(GENERATE)

# Its conformance test: greedy and beam search token for token against
# transformers' generate(), the sampling filters against its logits
# processors on recorded logits (through tests/drivers/drv_generate.c),
# fill-mask against ErnieForMaskedLM, and the errors
# (tests/conformance/generate_run.py, in the oracles' venv).
$(BUILD)/tests/drivers/drv_generate.o: ALL_CFLAGS += $(TRAIN_CFLAGS)
$(BUILD)/tests/drv_generate: $(BUILD)/tests/drivers/drv_generate.o \
		$(LIBTRAIN) $(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS) \
		$(LIBDATA_LIBS) $(REQ_LIBS)

.PHONY: test-generate
test-generate: $(GENERATE) $(BUILD)/tests/drv_generate $(BUILD)/train \
		$(VENV_STAMP)
	@tests/run-suite $(TEST_LOG) generate-conformance \
		$(VENV)/bin/python tests/conformance/generate_run.py \
		--build $(BUILD) --data $(DATA)
