# SPDX-License-Identifier: MIT
# Fuzzing.  Each tests/fuzz/fuzz_<target>.c is a libFuzzer target:
#   - `make fuzz` builds build-fuzz/fuzz_<target> with clang, ASan and
#     UBSan, over the libraries compiled once, instrumented, into
#     build-fuzz/lib*.a (a target links only what it uses);
#   - `make test` replays its corpus, testdata/fuzz/<target>/, through
#     replay.c (mk/tests.mk's replay_% rule; the rules below for the
#     targets that need more than libdata and libtok);
#   - `make fuzz-run` runs every target (or FUZZ_TARGETS) for FUZZ_TIME
#     seconds on a scratch copy of its corpus, on all cores (FUZZ_JOBS),
#     and turns what it finds into regression inputs (scripts/fuzz-run).

# ------------------------------------------------------ the corpus replays
# The trainer's parsers: libtrain and what it links.
FUZZ_TRAIN_TARGETS := safetensors train_config train_args trainer_state tblog
FUZZ_TRAIN_REPLAY := $(FUZZ_TRAIN_TARGETS:%=$(BUILD)/tests/replay_%)

$(FUZZ_TRAIN_TARGETS:%=$(BUILD)/tests/fuzz/fuzz_%.o): \
	ALL_CFLAGS += $(TRAIN_CFLAGS)
$(BUILD)/tests/fuzz/fuzz_tblog.o: $(TRAIN_PROTO_HDRS)
$(FUZZ_TRAIN_REPLAY): $(BUILD)/tests/replay_%: $(BUILD)/tests/fuzz/fuzz_%.o \
		$(BUILD)/tests/fuzz/fuzz_replay.o $(LIBTRAIN) $(LIBDATA) $(LIBTOK)
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -fopenmp -o $@ $^ $(LIBTRAIN_LIBS) \
		$(LIBDATA_LIBS) $(REQ_LIBS)

# fuzz_jieba_cut opens the build's jieba model wherever it runs.
FUZZ_JIEBA_DEF = -DFUZZ_JIEBA_MODEL='"$(abspath $(JIEBA_MODEL))"'
$(BUILD)/tests/fuzz/fuzz_jieba_cut.o: ALL_CFLAGS += $(FUZZ_JIEBA_DEF)
$(BUILD)/tests/replay_jieba_cut: | $(JIEBA_MODEL)

# ------------------------------------------------------ the libFuzzer build
FUZZ_CC ?= clang
FUZZ_BUILD := build-fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
# The libraries' objects get the fuzzer's coverage hooks without its
# main(); the link adds libFuzzer.
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -pthread -g -O1 -MMD -MP \
	-ffp-contract=off -fsanitize=fuzzer-no-link $(FUZZ_SAN) \
	-Ilibtok -Ilibdata -DPROJECT_NAME='"$(PROJECT)"' \
	-DPROJECT_VERSION='"$(VERSION)"'
FUZZ_LDFLAGS := -fsanitize=fuzzer $(FUZZ_SAN) -pthread
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_BUILD)/%)

FUZZ_LIBTOK := $(FUZZ_BUILD)/libtok.a
FUZZ_LIBDATA := $(FUZZ_BUILD)/libdata.a
FUZZ_LIBTRAIN := $(FUZZ_BUILD)/libtrain.a
# libtrain's C (never the CUDA backend: the stub where the tree has one,
# and none of the backend's libraries) and its protobuf-c records.
FUZZ_TRAIN_SRCS := $(sort $(LIBTRAIN_SRCS) $(wildcard train/ops_cuda_stub.c)) \
	$(TRAIN_PROTOS:train/log/%.proto=$(BUILD)/proto/%.pb-c.c)
FUZZ_TRAIN_LIBS = -fopenmp $(filter-out %.a,$(LIBTRAIN_LIBS))

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(QUIET_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

# (-O1 and the sanitizers keep OpenMP's simd loops scalar: no warning.)
$(FUZZ_BUILD)/obj/train/%.o $(FUZZ_BUILD)/obj/$(BUILD)/proto/%.o \
	$(FUZZ_TRAIN_TARGETS:%=$(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o): \
	FUZZ_CFLAGS += $(TRAIN_CFLAGS) -Wno-pass-failed
$(FUZZ_TRAIN_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o) \
	$(FUZZ_BUILD)/obj/tests/fuzz/fuzz_tblog.o: | $(TRAIN_PROTO_HDRS)
$(FUZZ_BUILD)/obj/tests/fuzz/fuzz_jieba_cut.o: FUZZ_CFLAGS += $(FUZZ_JIEBA_DEF)

$(FUZZ_LIBTOK): $(LIBTOK_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
$(FUZZ_LIBDATA): $(LIBDATA_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
$(FUZZ_LIBTRAIN): $(FUZZ_TRAIN_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
$(FUZZ_LIBTOK) $(FUZZ_LIBDATA) $(FUZZ_LIBTRAIN):
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

# A target is its harness over the libraries; wwm, json and gen_prompts
# add the tools' code they test, the trainer's targets libtrain.
$(FUZZ_BUILD)/fuzz_wwm: $(FUZZ_BUILD)/obj/tools/wwm.o
$(FUZZ_BUILD)/fuzz_json: $(FUZZ_BUILD)/obj/tools/cli_json.o
$(FUZZ_BUILD)/fuzz_gen_prompts: $(FUZZ_BUILD)/obj/tools/gen_reader.o \
	$(CLI_OBJS:$(BUILD)/tools/%=$(FUZZ_BUILD)/obj/tools/%)
$(FUZZ_BUILD)/obj/tools/cli_path.o: FUZZ_CFLAGS += \
	-DERNIEKIT_TOOLDIR_REL='"$(TOOLDIR_REL)"' \
	-DERNIEKIT_DATADIR_REL='"$(DATADIR_REL)"'
$(FUZZ_BUILD)/fuzz_jieba_cut: | $(JIEBA_MODEL)
$(FUZZ_TRAIN_TARGETS:%=$(FUZZ_BUILD)/fuzz_%): $(FUZZ_LIBTRAIN)
$(FUZZ_TRAIN_TARGETS:%=$(FUZZ_BUILD)/fuzz_%): FUZZ_LIBS = $(FUZZ_TRAIN_LIBS)

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o $(FUZZ_LIBDATA) \
		$(FUZZ_LIBTOK)
	$(QUIET_LINK)$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $(filter %.o,$^) \
		-Wl,--start-group $(filter %.a,$^) -Wl,--end-group \
		$(FUZZ_LIBS) $(LIBDATA_LIBS) $(REQ_LIBS)

.PHONY: fuzz
fuzz: $(FUZZ_BINS)

-include $(shell find $(FUZZ_BUILD) -name '*.d' 2>/dev/null)

# ------------------------------------------------------ campaigns
# make fuzz-run [FUZZ_TIME=seconds] [FUZZ_JOBS=n] [FUZZ_TARGETS='a b']
FUZZ_TIME ?= 60
FUZZ_JOBS ?=
FUZZ_TARGETS ?=

.PHONY: fuzz-run
fuzz-run:
	+@MAKE='$(MAKE)' scripts/fuzz-run -t $(FUZZ_TIME) \
		$(if $(FUZZ_JOBS),-j $(FUZZ_JOBS)) $(FUZZ_TARGETS)
