# SPDX-License-Identifier: MIT
# Man pages (mdoc) and formatting.

MAN1 := $(wildcard man/man1/*.1)
MAN3 := $(wildcard man/man3/*.3)
MAN5 := $(wildcard man/man5/*.5)
MAN7 := $(wildcard man/man7/*.7)
FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' '*.cu' '*.cuh' 2>/dev/null)

# The installed pages, built into $(BUILD)/man by scripts/erniekit-man:
# a command's page as erniekit-<command>(1) (the commands run as `erniekit
# <command>`), and every cross reference to a command renamed so.  The
# sources keep the build tree's short names.
MAN_COMMANDS := $(filter-out erniekit,$(basename $(notdir $(MAN1))))
MAN_OUT := $(BUILD)/man
INST_MAN1 := $(MAN_OUT)/man1/erniekit.1 \
	$(MAN_COMMANDS:%=$(MAN_OUT)/man1/erniekit-%.1)
INST_MAN3 := $(MAN3:man/%=$(MAN_OUT)/%)
INST_MAN5 := $(MAN5:man/%=$(MAN_OUT)/%)

$(MAN_OUT)/man1/erniekit-%.1: man/man1/%.1 scripts/erniekit-man
	@mkdir -p $(@D)
	$(Q)scripts/erniekit-man $< $(MAN_COMMANDS) > $@
$(MAN_OUT)/%: man/% scripts/erniekit-man
	@mkdir -p $(@D)
	$(Q)scripts/erniekit-man $< $(MAN_COMMANDS) > $@

ALL_TARGETS += $(INST_MAN1) $(INST_MAN3) $(INST_MAN5)

.PHONY: man-lint format format-check
man-lint:
	@mandoc -Tlint -Wwarning $(MAN1) $(MAN3) $(MAN5) $(MAN7) && \
		echo 'man-lint: 1 passed, 0 failed' || \
		{ echo 'man-lint: 0 passed, 1 failed'; exit 1; }

format:
	clang-format -i $(FORMAT_SRCS)

format-check:
	@clang-format --dry-run --Werror $(FORMAT_SRCS) && \
		echo 'format-check: 1 passed, 0 failed' || \
		{ echo 'format-check: 0 passed, 1 failed'; exit 1; }
