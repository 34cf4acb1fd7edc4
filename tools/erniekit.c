/* SPDX-License-Identifier: MIT */
/*
 * erniekit: the one installed command, git-style: `erniekit segment ...`
 * runs the program segment from the commands' directory (LIBEXECDIR/
 * erniekit, found relative to this program, or $ERNIEKIT_EXEC_PATH), so
 * the generic names (train, merge, segment) stay out of PATH.  Lists the
 * commands (--help), and suggests the nearest one for a typo.  See
 * erniekit(1).
 */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "banned.h"

/* The exit status when a known command cannot be run, as env(1) and the
 * shell use them: found but not runnable, not found. */
#define EXIT_CANNOT_RUN 126
#define EXIT_NOT_FOUND  127

/* The commands, in the order of the pipeline, with what they do. */
static const struct command {
    const char *name, *summary;
} commands[] = {
    { "segment", "split Chinese text into sentences and words (jieba)" },
    { "json-pack", "pack text documents into JSONL" },
    { "tokenize", "text to WordPiece or GPT-2 BPE ids, and ids to text" },
    { "create-pretraining-data",
      "JSONL documents to ERNIE or GPT token files" },
    { "merge", "merge token datasets into one" },
    { "dataset-inspect", "show what a token dataset holds" },
    { "vocab-build", "build ERNIE (WordPiece) and GPT (BPE) vocabularies" },
    { "train", "pretrain ERNIE or GPT (CPU or GPUs, one rank or several)" },
    { "generate", "text from a GPT checkpoint; ERNIE's fill-mask" },
    { "checkpoint-export", "write a checkpoint in PaddleNLP's layout" },
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

#define USAGE                                        \
    "usage: erniekit [-hV] command [argument ...]\n" \
    "       erniekit help [command]\n"

static void
usage(void)
{
    fputs(USAGE, stderr);
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf(USAGE "\n"
                 "Run an erniekit command: pretraining data for ERNIE and "
                 "GPT, and the trainer.\n"
                 "\n"
                 "Commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        printf("  %-25s%s\n", commands[i].name, commands[i].summary);
    printf("\n"
           "'erniekit help COMMAND' or 'erniekit COMMAND --help' shows the "
           "options of a\n"
           "command, 'man erniekit-COMMAND' its manual.\n"
           "\n"
           "  -h, --help       show this help and exit\n"
           "  -V, --version    show the version and exit\n"
           "\n"
           "Exit status: that of the command; 2 usage error or unknown "
           "command, 126 the\n"
           "command cannot be run, 127 it is not installed.\n");
    exit(0);
}

static const struct command *
find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* The optimal string alignment distance between a and b (insertions,
 * deletions, substitutions, swaps of two neighbours), or SIZE_MAX when a
 * is too long to be a typo of a command. */
static size_t
edit_distance(const char *a, const char *b)
{
    enum { MAX = 64 };
    size_t la = strlen(a), lb = strlen(b);
    size_t d[MAX + 1][MAX + 1];

    if (la > MAX || lb > MAX)
        return SIZE_MAX;
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

/* The command that name most likely meant: the one it begins (three
 * letters at least: "create" is create-pretraining-data), else the
 * nearest within two edits; NULL if none or several are as near. */
static const struct command *
suggest(const char *name)
{
    const struct command *best = NULL;
    size_t best_d = 3, len = strlen(name);
    int ties = 0;

    if (len >= 3) {
        for (size_t i = 0; i < N_COMMANDS; i++) {
            if (strncmp(commands[i].name, name, len) == 0) {
                best = &commands[i];
                ties++;
            }
        }
        if (ties == 1)
            return best;
    }
    best = NULL;
    ties = 0;
    for (size_t i = 0; i < N_COMMANDS; i++) {
        size_t d = edit_distance(name, commands[i].name);

        if (d < best_d) {
            best = &commands[i];
            best_d = d;
            ties = 1;
        } else if (d == best_d && best != NULL) {
            ties++;
        }
    }
    return ties == 1 ? best : NULL;
}

static const struct command *
known_command(const char *name)
{
    const struct command *c = find_command(name);
    const struct command *s;

    if (c != NULL)
        return c;
    s = suggest(name);
    if (s != NULL)
        warnx("'%s' is not an erniekit command; did you mean '%s'?", name,
              s->name);
    else
        warnx("'%s' is not an erniekit command; 'erniekit --help' lists "
              "them",
              name);
    exit(EXIT_USAGE);
}

/* The directory of the commands: $ERNIEKIT_EXEC_PATH, else
 * cli_tooldir_rel from this program's directory when it exists (an
 * install), else this program's own directory (the build tree, where
 * build/erniekit sits beside build/segment). */
static char *
exec_dir(void)
{
    const char *env = getenv("ERNIEKIT_EXEC_PATH");
    char *self, *dir;

    if (env && *env) {
        dir = strdup(env);
        if (dir == NULL)
            err(1, NULL);
        return dir;
    }
    self = cli_exe_dir();
    if (self == NULL)
        err(1, "cannot find where erniekit is (/proc/self/exe); set "
               "ERNIEKIT_EXEC_PATH to the directory of its commands");
    dir = cli_path_join(self, cli_tooldir_rel);
    if (dir == NULL)
        err(1, NULL);
    if (access(dir, X_OK) != 0) {
        free(dir);
        return self;
    }
    free(self);
    return dir;
}

/* Run command c with the arguments argv[1..argc), argv[0] being its name;
 * exits 126 or 127 if it cannot be run. */
static _Noreturn void
run(const struct command *c, int argc, char **argv)
{
    char *dir = exec_dir();
    size_t cap = strlen(dir) + 1 + strlen(c->name) + 1;
    char *path = malloc(cap);
    char **args = calloc((size_t)argc + 1, sizeof(*args));
    int saved;

    if (path == NULL || args == NULL)
        err(1, NULL);
    snprintf(path, cap, "%s/%s", dir, c->name);
    /* argv[0] is the program's path: its messages are then prefixed with
     * its own name (segment: ...), as when it is run directly. */
    args[0] = path;
    for (int i = 1; i < argc; i++)
        args[i] = argv[i];
    execv(path, args);
    saved = errno;
    if (saved == ENOENT && getenv("ERNIEKIT_EXEC_PATH") == NULL)
        warnx("cannot run '%s': '%s': %s (is erniekit installed? set "
              "ERNIEKIT_EXEC_PATH to the directory of the commands to run "
              "them elsewhere)",
              c->name, path, strerror(saved));
    else
        warnx("cannot run '%s': '%s': %s", c->name, path, strerror(saved));
    free(args);
    free(path);
    free(dir);
    exit(saved == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    const struct command *c;
    int ch;

    /* getopt's messages name argv[0]: "erniekit", not the path run. */
    argv[0] = program_invocation_short_name;
    /* "+": the options end at the command; the rest are the command's. */
    while ((ch = getopt_long(argc, argv, "+hV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'h':
            help();
            break;
        case 'V':
            printf("erniekit (%s) %s\n", PROJECT_NAME, PROJECT_VERSION);
            return 0;
        default:
            usage();
        }
    }
    argc -= optind;
    argv += optind;
    if (argc == 0)
        usage();
    if (strcmp(argv[0], "help") == 0) {
        char *help_args[] = { NULL, (char *)"--help", NULL };

        if (argc == 1)
            help();
        if (argc > 2)
            usage();
        c = known_command(argv[1]);
        help_args[0] = argv[1];
        run(c, 2, help_args);
    }
    c = known_command(argv[0]);
    run(c, argc, argv);
}
