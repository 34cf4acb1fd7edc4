/* SPDX-License-Identifier: MIT */
/*
 * fuzz_mapping.c: the samples-mapping cache reader (ds_mapping_load) on
 * arbitrary bytes, against the spec's 10b documents.  It must refuse with
 * DS_EFORMAT or accept a file whose every row it can read back within the
 * documents.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz.h"
#include "ds.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int64_t docs[7] = { 0, 3, 5, 7, 8, 12, 15 };
    static const struct ds_mapping_params p = { 2,    DS_MAPPING_EPOCHS_ANY,
                                                100,  0.5,
                                                1234, 2 };
    char path[] = "/tmp/fuzz_mapping.XXXXXX";
    struct ds_mapping *m;
    struct ds_err e;
    int fd = mkstemp(path), rc;

    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        unlink(path);
        return 0;
    }
    close(fd);
    rc = ds_mapping_load(&m, path, docs, 6, 15, &p, &e);
    unlink(path);
    if (rc < 0) {
        if (rc != DS_EFORMAT && rc != DS_EIO)
            abort();
        return 0;
    }
    for (uint64_t i = 0; i < ds_mapping_n(m); i++) {
        uint64_t row[3];

        ds_mapping_row(m, i, row);
        if (row[0] >= row[1] || row[1] > 15 || row[2] < 2 || row[2] > 100)
            abort();
    }
    ds_mapping_free(m);
    return 0;
}
