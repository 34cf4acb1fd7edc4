/* SPDX-License-Identifier: MIT */
/*
 * paddle_export.h: a checkpoint (ours, or a transformers save_pretrained
 * directory of ERNIE or GPT-2) as PaddleNLP's from_pretrained() loads it:
 * a directory holding model_state.pdparams (pdparams.h) under PaddleNLP's
 * parameter names and layouts (its nn.Linear weights are [in, out]: the
 * transpose of torch's), config.json with PaddleNLP's keys, and the
 * tokenizer's files as PaddleNLP's ErnieTokenizer and GPTTokenizer read
 * them.  ERNIE becomes ErnieForPretraining (ErnieForMaskedLM without the
 * SOP head), loadable by ErnieModel and the fine-tuning classes too; GPT
 * becomes GPTForCausalLM, whose activation PaddleNLP 2.8 computes with
 * the exact GELU or ReLU only.
 */
#ifndef TRAIN_PADDLE_EXPORT_H
#define TRAIN_PADDLE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What an export wrote. */
struct paddle_export_info {
    const char *architecture; /* "ErnieForPretraining", ... (static) */
    size_t n_tensors;         /* in model_state.pdparams */
    int has_tokenizer;        /* the tokenizer's files were written */
    /* A difference PaddleNLP's model makes, for the caller to say, or
     * "": ERNIE's LayerNorms use 1e-12 whatever the config says. */
    char note[256];
};

/* paddle_export: read the checkpoint directory src (config.json,
 * model.safetensors, and the tokenizer's files if it has them) and write
 * PaddleNLP's layout into dst, atomically (ckpt_write_dir(): a temporary
 * directory renamed into place).  dst must not exist, or be empty, or
 * (replace != 0) be an earlier export (holding model_state.pdparams), which
 * is replaced.  Returns 0, or -1 with err naming the file and what is
 * wrong: a missing or damaged file, a tensor missing, of another shape or
 * dtype than F32, or one PaddleNLP's model has no place for, an activation
 * PaddleNLP cannot compute (GPT's gelu_new), dst in the way. */
int paddle_export(const char *src, const char *dst, int replace,
                  struct paddle_export_info *info, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_PADDLE_EXPORT_H */
