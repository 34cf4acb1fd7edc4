/* SPDX-License-Identifier: MIT */
/*
 * generate: text from a GPT checkpoint (greedy search, sampling, beam
 * search, as transformers' generate() and PaddleNLP's flags) or the
 * masked tokens of an ERNIE one (--fill_mask), for prompts given as
 * arguments, text lines or JSONL records.  This file: the options, the
 * inputs and main(); gen_text.c and gen_mask.c do the two jobs over
 * libtrain's generate/ (train/generate/).  See generate(1).
 */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "generate.h"
#include "generate/gen_beam.h"
#include "ops.h"
#include "banned.h"

#define USAGE                                                               \
    "usage: generate [-hJqV] [--fill_mask] [-b batch_size] [-f format] "    \
    "[-k key]\n"                                                            \
    "                [-o output] [-p prompt ...] [--decode_strategy s]\n"   \
    "                [--top_k n] [--top_p p] [--temperature t] "            \
    "[--max_dec_len n]\n"                                                   \
    "                [--min_dec_len n] [--num_return_sequences n] "         \
    "[--num_beams n]\n"                                                     \
    "                [--length_penalty x] [--repetition_penalty x] "        \
    "[--seed n]\n"                                                          \
    "                [--device d] [--dtype t] [--threads n] -m checkpoint " \
    "[file ...]\n"

static void
usage(void)
{
    fputs(USAGE, stderr);
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf(
        USAGE
        "\n"
        "Generate text with a GPT checkpoint (train's model_<step>/ or a "
        "Hugging Face\n"
        "GPT-2 directory), or fill the [MASK]s of texts with an ERNIE one, "
        "as\n"
        "transformers' generate() and fill-mask do.  Prompts come from -p, "
        "then from\n"
        "the files, a prompt a line (or a JSONL field); no file or '-' "
        "reads stdin.\n"
        "\n"
        "  -m, --model_name_or_path DIR  the checkpoint: config.json, "
        "model.safetensors,\n"
        "                         tokenizer files\n"
        "  -p, --prompt TEXT      a prompt (repeatable; then no file is "
        "read unless given)\n"
        "  -J, --jsonl            inputs are JSONL: the prompt is a string "
        "field\n"
        "  -k, --json_key KEY     that field (default 'text'; implies -J)\n"
        "  -f, --format FMT       text (default: prompt and its "
        "continuation a line) or\n"
        "                         jsonl (a record per sequence, with the "
        "ids)\n"
        "  -o, --output FILE      write to FILE (via a temporary file) "
        "instead of stdout\n"
        "  -b, --batch_size N     prompts generated together (default 8)\n"
        "      --stream, --no_stream  print tokens as they come (default: "
        "on a terminal)\n"
        "      --fill_mask        ERNIE: the top_k tokens of each [MASK] "
        "(the default\n"
        "                         for an ERNIE checkpoint; top_k 5 unless "
        "given)\n"
        "      --decode_strategy S  sampling (default), greedy_search or "
        "beam_search\n"
        "      --top_k N          sampling: the N likeliest tokens (default "
        "50; 0: all)\n"
        "      --top_p P          sampling: the likeliest tokens whose "
        "probabilities sum\n"
        "                         to P, 0 < P <= 1 (default 0.75)\n"
        "      --temperature T    sampling: logits / T, T > 0 (default 1.0)\n"
        "      --repetition_penalty X  seen tokens' logits / X (x X if "
        "negative)\n"
        "                         (default 1.0: none)\n"
        "      --min_dec_len N    no end of text before N new tokens "
        "(default 1)\n"
        "      --max_dec_len N    at most N new tokens (default 200)\n"
        "      --num_return_sequences N  sequences per prompt (default 1)\n"
        "      --num_beams N      beam_search: beams per prompt (default 4)\n"
        "      --length_penalty X beam_search: scores / length^X (default "
        "1.0)\n"
        "      --early_stopping   beam_search: stop at num_beams finished "
        "hypotheses\n"
        "      --eos_token_id N   the end-of-text id (default: config.json's; "
        "-1: none)\n"
        "      --seed N           sampling's seed (default 1234)\n"
        "      --device D         cpu, cuda or auto (default: a GPU if "
        "there is one)\n"
        "      --dtype T          float32 (default), bfloat16 or float16\n"
        "      --threads N        CPU threads (default: OpenMP's)\n"
        "  -q, --quiet            no messages but errors\n"
        "  -h, --help             show this help and exit\n"
        "  -V, --version          show the version and exit\n"
        "\n"
        "Exit status: 0 success, 1 failure (a bad checkpoint, input or "
        "prompt), 2 usage\n"
        "error.\n");
    exit(0);
}

/* ------------------------------------------------------------ numbers */

/* A usage error about flag's value: "generate: --top_p 0: must be ...". */
static void __attribute__((noreturn, format(printf, 3, 4)))
bad_value(const char *flag, const char *value, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "generate: --%s %s: ", flag, value);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fputs(USAGE, stderr);
    exit(EXIT_USAGE);
}

/* A finite number in [lo, hi] (lo excluded when open_lo). */
static double
parse_num(const char *flag, const char *s, double lo, double hi, bool open_lo)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
        bad_value(flag, s, "not a number");
    if (v < lo || (open_lo && v == lo) || v > hi) {
        if (hi >= 1e300)
            bad_value(flag, s, "must be %s %g",
                      open_lo ? "greater than" : "at least", lo);
        bad_value(flag, s, "must be %s %g and at most %g",
                  open_lo ? "greater than" : "at least", lo, hi);
    }
    return v;
}

static long
parse_int(const char *flag, const char *s, long lo, long hi)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE)
        bad_value(flag, s, "not an integer");
    if (v < lo || v > hi)
        bad_value(flag, s, "must be %ld to %ld", lo, hi);
    return v;
}

/* ------------------------------------------------------------ options */

enum {
    OPT_FILL_MASK = 256,
    OPT_STREAM,
    OPT_NO_STREAM,
    OPT_STRATEGY,
    OPT_TOP_K,
    OPT_TOP_P,
    OPT_TEMPERATURE,
    OPT_REPETITION,
    OPT_MIN_LEN,
    OPT_MAX_LEN,
    OPT_NUM_RETURN,
    OPT_NUM_BEAMS,
    OPT_LENGTH_PENALTY,
    OPT_EARLY_STOPPING,
    OPT_EOS,
    OPT_SEED,
    OPT_DEVICE,
    OPT_DTYPE,
    OPT_THREADS,
};

/* Each long name also with dashes (--top-k), as train reads them. */
#define BOTH(us, ds, has, val) \
    { us, has, NULL, val },    \
    {                          \
        ds, has, NULL, val     \
    }

static void
parse_options(struct gen_opts *o, int *argc, char ***argv)
{
    static const struct option longopts[] = {
        BOTH("batch_size", "batch-size", required_argument, 'b'),
        { "format", required_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { "jsonl", no_argument, NULL, 'J' },
        BOTH("json_key", "json-key", required_argument, 'k'),
        BOTH("model_name_or_path", "model-name-or-path", required_argument,
             'm'),
        { "output", required_argument, NULL, 'o' },
        { "prompt", required_argument, NULL, 'p' },
        { "quiet", no_argument, NULL, 'q' },
        { "version", no_argument, NULL, 'V' },
        BOTH("fill_mask", "fill-mask", no_argument, OPT_FILL_MASK),
        { "stream", no_argument, NULL, OPT_STREAM },
        BOTH("no_stream", "no-stream", no_argument, OPT_NO_STREAM),
        BOTH("decode_strategy", "decode-strategy", required_argument,
             OPT_STRATEGY),
        BOTH("top_k", "top-k", required_argument, OPT_TOP_K),
        BOTH("top_p", "top-p", required_argument, OPT_TOP_P),
        { "temperature", required_argument, NULL, OPT_TEMPERATURE },
        BOTH("repetition_penalty", "repetition-penalty", required_argument,
             OPT_REPETITION),
        BOTH("min_dec_len", "min-dec-len", required_argument, OPT_MIN_LEN),
        BOTH("max_dec_len", "max-dec-len", required_argument, OPT_MAX_LEN),
        BOTH("num_return_sequences", "num-return-sequences", required_argument,
             OPT_NUM_RETURN),
        BOTH("num_beams", "num-beams", required_argument, OPT_NUM_BEAMS),
        BOTH("length_penalty", "length-penalty", required_argument,
             OPT_LENGTH_PENALTY),
        BOTH("early_stopping", "early-stopping", no_argument,
             OPT_EARLY_STOPPING),
        BOTH("eos_token_id", "eos-token-id", required_argument, OPT_EOS),
        { "seed", required_argument, NULL, OPT_SEED },
        { "device", required_argument, NULL, OPT_DEVICE },
        { "dtype", required_argument, NULL, OPT_DTYPE },
        { "threads", required_argument, NULL, OPT_THREADS },
        { NULL, 0, NULL, 0 }
    };
    static const char *const strategies[] = { "sampling", "greedy_search",
                                              "beam_search", NULL };
    struct gen_params *gp = &o->gp;
    int ch;

    memset(o, 0, sizeof(*o));
    o->json_key = "text";
    o->batch_size = 8;
    o->stream = -1;
    o->device = "auto";
    o->dtype = "float32";
    gp->strategy = GEN_SAMPLING;
    gp->filter.top_k = 50;
    gp->filter.top_p = 0.75f;
    gp->filter.temperature = 1.0f;
    gp->filter.repetition_penalty = 1.0f;
    gp->filter.min_new_tokens = 1;
    gp->max_new_tokens = 200;
    gp->num_return = 1;
    gp->num_beams = 4;
    gp->length_penalty = 1.0;
    gp->seed = 1234;
    while ((ch = getopt_long(*argc, *argv, "b:f:hJk:m:o:p:qV", longopts,
                             NULL)) != -1) {
        switch (ch) {
        case 'b':
            o->batch_size = (int)parse_int("batch_size", optarg, 1, 4096);
            break;
        case 'f': {
            static const char *const formats[] = { "text", "jsonl", NULL };
            int k = cli_parse_choice(optarg, "format", formats);

            if (k < 0)
                usage();
            o->format = (enum gen_format)k;
            break;
        }
        case 'h':
            help();
            break;
        case 'J':
            o->jsonl = true;
            break;
        case 'k':
            o->json_key = optarg;
            o->jsonl = true;
            break;
        case 'm':
            o->model = optarg;
            break;
        case 'o':
            o->output = optarg;
            break;
        case 'p': {
            const char **p =
                realloc(o->prompts, (o->n_prompts + 1) * sizeof(*o->prompts));

            if (p == NULL)
                err(1, "out of memory");
            o->prompts = p;
            o->prompts[o->n_prompts++] = optarg;
            break;
        }
        case 'q':
            o->quiet = true;
            break;
        case 'V':
            cli_print_version("generate");
            exit(0);
        case OPT_FILL_MASK:
            o->fill_mask = true;
            break;
        case OPT_STREAM:
            o->stream = 1;
            break;
        case OPT_NO_STREAM:
            o->stream = 0;
            break;
        case OPT_STRATEGY: {
            int k;

            for (k = 0; strategies[k] && strcmp(strategies[k], optarg); k++)
                ;
            if (strategies[k] == NULL)
                bad_value("decode_strategy", optarg,
                          "use sampling, greedy_search or beam_search");
            gp->strategy = k == 0   ? GEN_SAMPLING
                           : k == 1 ? GEN_GREEDY
                                    : GEN_BEAM;
            break;
        }
        case OPT_TOP_K:
            gp->filter.top_k = (int)parse_int("top_k", optarg, 0, INT32_MAX);
            o->top_k_set = true;
            break;
        case OPT_TOP_P:
            gp->filter.top_p = (float)parse_num("top_p", optarg, 0, 1, true);
            break;
        case OPT_TEMPERATURE:
            gp->filter.temperature =
                (float)parse_num("temperature", optarg, 0, 1e300, true);
            break;
        case OPT_REPETITION:
            gp->filter.repetition_penalty =
                (float)parse_num("repetition_penalty", optarg, 0, 1e300, true);
            break;
        case OPT_MIN_LEN:
            gp->filter.min_new_tokens =
                (int)parse_int("min_dec_len", optarg, 0, INT32_MAX);
            break;
        case OPT_MAX_LEN:
            gp->max_new_tokens =
                (int)parse_int("max_dec_len", optarg, 1, 1 << 24);
            break;
        case OPT_NUM_RETURN:
            gp->num_return =
                (int)parse_int("num_return_sequences", optarg, 1, 256);
            break;
        case OPT_NUM_BEAMS:
            gp->num_beams =
                (int)parse_int("num_beams", optarg, 1, GEN_BEAMS_MAX);
            o->num_beams_set = true;
            break;
        case OPT_LENGTH_PENALTY:
            gp->length_penalty =
                parse_num("length_penalty", optarg, -1e300, 1e300, false);
            break;
        case OPT_EARLY_STOPPING:
            gp->early_stopping = 1;
            break;
        case OPT_EOS:
            o->eos = (int32_t)parse_int("eos_token_id", optarg, -1, INT32_MAX);
            o->eos_set = true;
            break;
        case OPT_SEED:
            gp->seed = (uint64_t)parse_int("seed", optarg, 0, INT64_MAX);
            break;
        case OPT_DEVICE:
            o->device = strcmp(optarg, "gpu") == 0 ? "cuda" : optarg;
            if (strcmp(o->device, "cpu") && strcmp(o->device, "cuda") &&
                strcmp(o->device, "auto"))
                bad_value("device", optarg, "use cpu, cuda (gpu) or auto");
            break;
        case OPT_DTYPE:
            if (strcmp(optarg, "float32") && strcmp(optarg, "bfloat16") &&
                strcmp(optarg, "float16"))
                bad_value("dtype", optarg, "use float32, bfloat16 or float16");
            o->dtype = optarg;
            break;
        case OPT_THREADS:
            o->threads = (int)parse_int("threads", optarg, 0, 4096);
            break;
        default:
            usage();
        }
    }
    *argc -= optind;
    *argv += optind;
    if (o->model == NULL) {
        fputs("generate: -m (--model_name_or_path) is required: the "
              "checkpoint directory\n",
              stderr);
        usage();
    }
    if (gp->strategy == GEN_BEAM) {
        if (o->num_beams_set && gp->num_beams < 2)
            bad_value("num_beams", "1",
                      "beam_search needs at least 2 beams "
                      "(1 is greedy_search)");
        if (gp->num_return > gp->num_beams) {
            char v[32];

            snprintf(v, sizeof(v), "%d", gp->num_return);
            bad_value("num_return_sequences", v,
                      "beam_search returns at most --num_beams (%d) "
                      "sequences",
                      gp->num_beams);
        }
    }
}

/* ------------------------------------------------------------ JSON */

int
gen_buf_printf(struct tok_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    if ((size_t)n < sizeof(small))
        return tok_buf_append(b, small, (size_t)n);
    {
        char *big = malloc((size_t)n + 1);
        int rc;

        if (big == NULL)
            return -1;
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        rc = tok_buf_append(b, big, (size_t)n);
        free(big);
        return rc;
    }
}

int
gen_json_ids(struct tok_buf *b, const int32_t *ids, size_t n)
{
    if (tok_buf_append(b, "[", 1) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (gen_buf_printf(b, i ? ", %d" : "%d", ids[i]) < 0)
            return -1;
    return tok_buf_append(b, "]", 1);
}

/* ------------------------------------------------------------ main */

int
main(int argc, char **argv)
{
    struct gen_opts o;
    struct gen_checkpoint c;
    struct gen_reader *rd;
    struct cli_output out;
    struct ops_request rq;
    const struct ops *ops;
    char err[1024];
    int rval = 0;

    parse_options(&o, &argc, &argv);
    if (gen_checkpoint_open(&c, o.model, err, sizeof(err)) < 0) {
        warnx("%s", err);
        rval = 1;
        goto out;
    }
    if (o.fill_mask && c.cfg.type != MODEL_ERNIE) {
        warnx("--fill_mask: '%s' is a GPT checkpoint; fill-mask takes an "
              "ERNIE one",
              o.model);
        rval = EXIT_USAGE;
        goto out;
    }
    rq.device = o.device;
    rq.dtype = strcmp(o.dtype, "bfloat16") == 0  ? OPS_BF16
               : strcmp(o.dtype, "float16") == 0 ? OPS_F16
                                                 : OPS_F32;
    rq.local_rank = 0;
    rq.threads = o.threads;
    rq.deterministic = 1;
    rq.tf32 = 0;
    ops = ops_open(&rq, err, sizeof(err));
    if (ops == NULL) {
        warnx("%s", err);
        rval = 1;
        goto out;
    }
    if (!o.quiet && ops->device >= 0)
        fprintf(stderr, "generate: %s\n", err);
    rd =
        gen_reader_new(o.prompts, o.n_prompts, o.jsonl, o.json_key, argc, argv);
    if (rd == NULL)
        errx(1, "out of memory");
    cli_output_open(&out, o.output);
    rval = c.cfg.type == MODEL_ERNIE ? gen_mask_run(&o, &c, ops, rd, &out)
                                     : gen_text_run(&o, &c, ops, rd, &out);
    if (cli_output_commit(&out) < 0)
        rval = 1;
    gen_reader_free(rd);
    ops->close();
out:
    gen_checkpoint_close(&c);
    free(o.prompts);
    return cli_exit_status(rval);
}
