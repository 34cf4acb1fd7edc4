# SPDX-License-Identifier: MIT
# `make pgo`: the preprocessing tools built with GCC's profile-guided
# optimization into build-pgo/.  They are built instrumented, trained on
# the main jobs over the shared data's PKU test text
# (scripts/pgo-train.sh, one worker, so the profile is the same run to
# run), then built again from that profile.  Same output, which
# `make test-pgo` checks byte for byte against build/; a few per cent
# faster (BENCHMARKS.md).  GCC only; the default build stays plain -O2.

PGO_BUILD := build-pgo
PGO_TOOLS := segment json-pack tokenize create-pretraining-data jieba.model
PGO_TARGETS = $(addprefix $(PGO_BUILD)/,$(PGO_TOOLS))

.PHONY: pgo
pgo: deps
	rm -rf $(PGO_BUILD)
	$(MAKE) --no-print-directory BUILD=$(PGO_BUILD) \
		OPT_CFLAGS='-O2 -g -fprofile-generate -fprofile-update=single' \
		OPT_LDFLAGS=-fprofile-generate $(PGO_TARGETS)
	scripts/pgo-train.sh $(PGO_BUILD) $(DATA)
	@# Keep the profile (*.gcda), rebuild every object from it.
	find $(PGO_BUILD) \( -name '*.o' -o -name '*.a' \) -delete
	rm -f $(PGO_TARGETS)
	$(MAKE) --no-print-directory BUILD=$(PGO_BUILD) \
		OPT_CFLAGS='-O2 -g -fprofile-use -fprofile-partial-training -Wno-missing-profile' \
		$(PGO_TARGETS)

# The PGO build's output against the plain build's, on the same jobs.
.PHONY: test-pgo
test-pgo: pgo all
	scripts/pgo-train.sh --compare build $(PGO_BUILD) $(DATA)
