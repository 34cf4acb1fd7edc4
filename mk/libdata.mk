# SPDX-License-Identifier: MIT
# libdata: the token dataset formats (.bin/.idx and _ids.npy/_idx.npz).
# Whatever links $(LIBDATA) adds $(LIBDATA_LIBS) to its libraries.

LIBDATA_SRCS := $(wildcard libdata/ds_*.c)
LIBDATA_OBJS := $(LIBDATA_SRCS:%.c=$(BUILD)/%.o)
LIBDATA := $(BUILD)/libdata.a
LIBDATA_LIBS := -lzip -lnettle

# ds.h is included as "ds.h" by the tools, the trainer and the tests.
ifeq ($(filter -Ilibdata,$(PROJECT_CFLAGS)),)
PROJECT_CFLAGS += -Ilibdata
endif

$(LIBDATA): $(LIBDATA_OBJS)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

ALL_TARGETS += $(LIBDATA)

# Installed with the rest by `make install`.
.PHONY: install-libdata uninstall-libdata
install: install-libdata
install-libdata: $(LIBDATA)
	$(INSTALL) -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)
	$(INSTALL) -m 644 $(LIBDATA) $(DESTDIR)$(LIBDIR)
	$(INSTALL) -m 644 libdata/ds.h $(DESTDIR)$(INCLUDEDIR)

uninstall: uninstall-libdata
uninstall-libdata:
	rm -f $(DESTDIR)$(LIBDIR)/$(notdir $(LIBDATA))
	rm -f $(DESTDIR)$(INCLUDEDIR)/ds.h
