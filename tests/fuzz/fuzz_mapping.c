/* SPDX-License-Identifier: MIT */
/*
 * fuzz_mapping.c: the samples-mapping cache reader (ds_mapping_load) on
 * arbitrary bytes, against the spec's 10b documents.  It must refuse with
 * DS_EFORMAT or accept a file whose every row it can read back within the
 * documents.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "ds.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int64_t docs[7] = { 0, 3, 5, 7, 8, 12, 15 };
    static const struct ds_mapping_params p = { 2,    DS_MAPPING_EPOCHS_ANY,
                                                100,  0.5,
                                                1234, 2 };
    char path[FUZZ_PATH_MAX];
    struct ds_mapping *m;
    struct ds_err e;
    int rc;

    fuzz_write_file(fuzz_tmp_path(path, sizeof(path), "mapping.npy"), data,
                    size);
    rc = ds_mapping_load(&m, path, docs, 6, 15, &p, &e);
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
