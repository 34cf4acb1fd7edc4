/* SPDX-License-Identifier: MIT */
/*
 * lac_fixture.h: a tiny LAC package written on the fly, for the unit tests
 * and the fuzz targets: the layout of LAC 2.1.2's (seg_model/ and
 * lac_model/, each with model/ in Paddle's parameter format and conf/ with
 * LAC's dictionaries), small odd sizes (so every SIMD tail is taken), and
 * weights from a fixed pseudo-random sequence.  Nothing of LAC is in it.
 *
 *     lac_fixture_write(dir);     // into an existing, empty directory
 *     ... tok_lac_compile(dir, model, NULL, &e) ...
 */
#ifndef LAC_FIXTURE_H
#define LAC_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The characters and words of the fixture's word.dic (ids in order; the
 * `lac` network's words after its characters), its tags, and its
 * small_seg.dic. */
static const char *const lac_fixture_chars[] = {
    " ",
    "\t",
    "a",
    "b",
    "c",
    "1",
    "2",
    "A",
    "B",
    "\xe7\x99\xbe",     /* 百 */
    "\xe5\xba\xa6",     /* 度 */
    "\xe6\x98\xaf",     /* 是 */
    "\xe4\xb8\x80",     /* 一 */
    "\xe5\xae\xb6",     /* 家 */
    "\xe9\xab\x98",     /* 高 */
    "\xe7\xa7\x91",     /* 科 */
    "\xe6\x8a\x80",     /* 技 */
    "\xe5\x85\xac",     /* 公 */
    "\xe5\x8f\xb8",     /* 司 */
    "\xf0\xa0\xae\xb7", /* 𠮷 */
};
#define LAC_FIXTURE_N_CHARS 20
static const char *const lac_fixture_words[] = {
    "\xe7\x99\xbe\xe5\xba\xa6",             /* 百度 */
    "\xe5\x85\xac\xe5\x8f\xb8",             /* 公司 */
    "\xe9\xab\x98\xe7\xa7\x91\xe6\x8a\x80", /* 高科技 */
    "ab",
    "12",
};
#define LAC_FIXTURE_N_WORDS 5

static uint32_t lac_fixture_rng = 12345;

static float
lac_fixture_rand(void)
{
    lac_fixture_rng = lac_fixture_rng * 1103515245u + 12345u;
    return ((float)((lac_fixture_rng >> 8) & 0xFFFF) / 32768.0f - 1.0f);
}

static void
lac_fixture_varint(FILE *f, uint64_t v)
{
    do {
        unsigned char c = v & 0x7F;

        v >>= 7;
        if (v)
            c |= 0x80;
        fputc(c, f);
    } while (v);
}

/* A Paddle LoDTensor file of d0 x d1 (d1 0: a vector) random floats. */
static int
lac_fixture_tensor(const char *dir, const char *name, uint64_t d0, uint64_t d1,
                   float scale)
{
    char path[1200], desc[64];
    FILE *f, *m;
    uint32_t z32 = 0, dlen;
    uint64_t z64 = 0, n = d0 * (d1 ? d1 : 1);
    long desc_len;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if ((m = fmemopen(desc, sizeof(desc), "wb")) == NULL)
        return -1;
    fputc(0x08, m);
    fputc(0x05, m);
    fputc(0x10, m);
    lac_fixture_varint(m, d0);
    if (d1) {
        fputc(0x10, m);
        lac_fixture_varint(m, d1);
    }
    desc_len = ftell(m);
    fclose(m);
    if ((f = fopen(path, "wb")) == NULL)
        return -1;
    fwrite(&z32, 4, 1, f);
    fwrite(&z64, 8, 1, f);
    fwrite(&z32, 4, 1, f);
    dlen = (uint32_t)desc_len;
    fwrite(&dlen, 4, 1, f);
    fwrite(desc, 1, (size_t)desc_len, f);
    for (uint64_t k = 0; k < n; k++) {
        float v = scale * lac_fixture_rand();

        fwrite(&v, 4, 1, f);
    }
    return fclose(f);
}

static int
lac_fixture_text(const char *dir, const char *name, const char *text)
{
    char path[1200];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if ((f = fopen(path, "wb")) == NULL)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* One network: E, D, L and its tags; with_words: word.dic has the words
 * too (the `lac` network). */
static int
lac_fixture_network(const char *top, const char *mode, unsigned E, unsigned D,
                    const char *const *tags, unsigned L, const char *tag_extra,
                    int with_words)
{
    char dir[1000], model[1100], conf[1100], buf[4096], name[32];
    unsigned V =
        LAC_FIXTURE_N_CHARS + (with_words ? LAC_FIXTURE_N_WORDS : 0) + 1;
    size_t at = 0;
    int rc = 0;

    snprintf(dir, sizeof(dir), "%s/%s", top, mode);
    snprintf(model, sizeof(model), "%s/model", dir);
    snprintf(conf, sizeof(conf), "%s/conf", dir);
    if (mkdir(dir, 0755) < 0 || mkdir(model, 0755) < 0 || mkdir(conf, 0755) < 0)
        return -1;
    rc |= lac_fixture_tensor(model, "word_emb", V, E, 0.5f);
    for (int k = 0; k < 4; k++) {
        unsigned in = k < 2 ? E : 2 * D;

        snprintf(name, sizeof(name), "fc_%d.w_0", k);
        rc |= lac_fixture_tensor(model, name, in, 3 * D, 0.6f);
        snprintf(name, sizeof(name), "fc_%d.b_0", k);
        rc |= lac_fixture_tensor(model, name, 3 * D, 0, 0.2f);
        snprintf(name, sizeof(name), "gru_%d.w_0", k);
        rc |= lac_fixture_tensor(model, name, D, 3 * D, 0.6f);
        snprintf(name, sizeof(name), "gru_%d.b_0", k);
        rc |= lac_fixture_tensor(model, name, 1, 3 * D, 0.2f);
    }
    rc |= lac_fixture_tensor(model, "fc_4.w_0", 2 * D, L, 1.0f);
    rc |= lac_fixture_tensor(model, "fc_4.b_0", L, 0, 0.2f);
    rc |= lac_fixture_tensor(model, "crfw", L + 2, L, 0.5f);
    /* word.dic: id<TAB>word; OOV last. */
    for (unsigned k = 0; k < LAC_FIXTURE_N_CHARS; k++)
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%u\t%s\n", k,
                               lac_fixture_chars[k]);
    if (with_words)
        for (unsigned k = 0; k < LAC_FIXTURE_N_WORDS; k++)
            at +=
                (size_t)snprintf(buf + at, sizeof(buf) - at, "%u\t%s\n",
                                 LAC_FIXTURE_N_CHARS + k, lac_fixture_words[k]);
    snprintf(buf + at, sizeof(buf) - at, "%u\tOOV\n", V - 1);
    rc |= lac_fixture_text(conf, "word.dic", buf);
    at = 0;
    for (unsigned k = 0; k < L; k++)
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%u\t%s\n", k,
                               tags[k]);
    snprintf(buf + at, sizeof(buf) - at, "%s", tag_extra);
    rc |= lac_fixture_text(conf, "tag.dic", buf);
    /* Full-width A and 1 to ASCII, 臺 to 高, and A to B: LAC applies one
     * pass, so Ａ is A, not B. */
    rc |= lac_fixture_text(conf, "q2b.dic",
                           "\xef\xbc\xa1\tA\n\xef\xbc\x91\t1\n"
                           "\xe8\x87\xba\t\xe9\xab\x98\nA\tB\n");
    rc |=
        lac_fixture_text(conf, "small_seg.dic",
                         "\xe7\x99\xbe\xe5\xba\xa6 100\n"           /* 百度 */
                         "\xe9\xab\x98\xe7\xa7\x91 30\n"            /* 高科 */
                         "\xe9\xab\x98\xe7\xa7\x91\xe6\x8a\x80 5\n" /* 高科技 */
                         "\xe7\xa7\x91\xe6\x8a\x80 50\n"            /* 科技 */
                         "\xe5\x85\xac\xe5\x8f\xb8 80\n"            /* 公司 */
                         "\xe4\xb8\x80\xe5\xae\xb6 20\n"            /* 一家 */
                         "ab 3\n");
    return rc;
}

/* Write the fixture into the directory dir. */
static int
lac_fixture_write(const char *dir)
{
    static const char *const seg_tags[] = { "-B", "-I", "-E", "-S" };
    static const char *const lac_tags[] = { "n-B",  "n-I",   "v-B",
                                            "v-I",  "LOC-B", "PER-I",
                                            "nr-B", "O",     "w-B" };
    char top[900];

    lac_fixture_rng = 12345;
    snprintf(top, sizeof(top), "%s", dir);
    /* As LAC's tag.dic, an id given twice (the later line wins: 6 is
     * PER-B); and lines LAC's reader passes over: a key that is not an
     * id's decimal form, three fields. */
    if (lac_fixture_network(top, "seg_model", 5, 3, seg_tags, 4, "", 0) < 0 ||
        lac_fixture_network(top, "lac_model", 4, 5, lac_tags, 9,
                            "6\tPER-B\n07\tX-B\n1\tY-B\tZ\n", 1) < 0)
        return -1;
    return 0;
}

#endif /* LAC_FIXTURE_H */
