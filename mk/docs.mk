# SPDX-License-Identifier: MIT
# Man pages (mdoc) and formatting.

MAN1 := $(wildcard man/man1/*.1)
MAN3 := $(wildcard man/man3/*.3)
MAN5 := $(wildcard man/man5/*.5)
MAN7 := $(wildcard man/man7/*.7)
FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' '*.cu' '*.cuh' 2>/dev/null)

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
