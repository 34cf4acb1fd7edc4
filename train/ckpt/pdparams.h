/* SPDX-License-Identifier: MIT */
/*
 * pdparams.h: PaddlePaddle's model_state.pdparams, the weights file that
 * paddle.save() writes and paddle.load() and PaddleNLP's from_pretrained()
 * read: a Python pickle (protocol 4) of a dict from parameter names to
 * numpy arrays.  Each array is pickled as numpy pickles it (its
 * ndarray.__reduce__: numpy.core.multiarray._reconstruct, then the state
 * tuple (1, shape, dtype('<f4'), False, raw bytes)), so that any pickle
 * reader with numpy loads it, Paddle's included.  Only float32 arrays of
 * one or two dimensions are written; Paddle's optional
 * "StructuredToParameterName@@" entry is not.
 */
#ifndef TRAIN_PDPARAMS_H
#define TRAIN_PDPARAMS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One array: name (UTF-8), shape (ndim 1 or 2), data (row-major float32,
 * the product of the shape's elements; host memory). */
struct pd_tensor {
    const char *name;
    int ndim;
    int64_t shape[2];
    const float *data;
};

/* pdparams_write: the n arrays t[0..n) as a pickled dict, in that order,
 * to the new file path (it must not exist), synced to disk.  Returns 0, or
 * -1 with err naming the file and what is wrong (an I/O error: the file is
 * removed; a bad shape or a duplicate name: nothing is written). */
int pdparams_write(const char *path, const struct pd_tensor *t, size_t n,
                   char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_PDPARAMS_H */
