/* SPDX-License-Identifier: MIT */
/*
 * vocab_spm.cc: the English pieces of the seed's vocab, trained by Debian's
 * libsentencepiece (0.1.97) exactly as `spm_train --model_type=bpe` trains
 * them: a thin C++ shim behind the C function vocab_spm_train() of vocab.h.
 * Every option spm_train sets from its flags is set here to the flag's
 * default, so the model (whose trainer_spec records them) and the
 * "piece<TAB>score" vocab come out byte for byte as spm_train's.  No C++
 * exception crosses into C.
 */
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <string>
#include <unistd.h>
#include <unordered_map>
#include <vector>
#include <zstd.h>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "vocab.h"

namespace
{

/* spm_train's default num_threads (its flag and TrainerSpec agree). */
constexpr unsigned kSpmDefaultThreads = 16;
/* TrainerInterface rejects num_threads outside 1..128. */
constexpr unsigned kSpmMaxThreads = 128;

void set_err(struct tok_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void
set_err(struct tok_err *err, int code, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

/* One input as sentencepiece's CSV list wants it (util::StrSplitAsCSV):
 * quoted, with '"' doubled, when it holds a comma or a quote. */
std::string
csv_field(const std::string &s)
{
    if (s.find_first_of(",\"") == std::string::npos)
        return s;
    std::string q = "\"";
    for (char c : s) {
        if (c == '"')
            q += '"';
        q += c;
    }
    return q + "\"";
}

/* Temporary files made by this call, removed when it returns. */
struct temp_files {
    std::vector<std::string> paths;
    ~temp_files()
    {
        for (const auto &p : paths)
            unlink(p.c_str());
    }
};

/* Decompress the zstd file `path` (already open as fp, at its start) to a
 * new temporary file, whose name goes to *out.  Returns 0 or a tok_status. */
int
unzstd_to_temp(const char *path, FILE *fp, temp_files *tmps, std::string *out,
               struct tok_err *err)
{
    const char *dir = getenv("TMPDIR");
    std::string tmpl =
        std::string(dir && *dir ? dir : "/tmp") + "/vocab-spm-XXXXXX";
    std::vector<char> name(tmpl.begin(), tmpl.end());
    name.push_back('\0');
    int fd = mkstemp(name.data());
    if (fd < 0) {
        set_err(err, TOK_EIO, "cannot create a temporary file in '%s': %s",
                dir && *dir ? dir : "/tmp", strerror(errno));
        return TOK_EIO;
    }
    tmps->paths.push_back(name.data());
    FILE *dst = fdopen(fd, "wb");
    if (!dst) {
        close(fd);
        set_err(err, TOK_ENOMEM, "out of memory");
        return TOK_ENOMEM;
    }

    ZSTD_DStream *zds = ZSTD_createDStream();
    std::vector<char> in(ZSTD_DStreamInSize()), obuf(ZSTD_DStreamOutSize());
    size_t last = 0;
    int rc = 0;
    if (!zds) {
        set_err(err, TOK_ENOMEM, "out of memory");
        rc = TOK_ENOMEM;
    }
    while (rc == 0) {
        size_t n = fread(in.data(), 1, in.size(), fp);
        if (n == 0) {
            if (ferror(fp)) {
                set_err(err, TOK_EIO, "cannot read '%s': %s", path,
                        strerror(errno));
                rc = TOK_EIO;
            } else if (last != 0) {
                set_err(err, TOK_EFORMAT, "'%s': truncated zstd data", path);
                rc = TOK_EFORMAT;
            }
            break;
        }
        ZSTD_inBuffer ib = { in.data(), n, 0 };
        while (rc == 0 && ib.pos < ib.size) {
            ZSTD_outBuffer ob = { obuf.data(), obuf.size(), 0 };
            last = ZSTD_decompressStream(zds, &ob, &ib);
            if (ZSTD_isError(last)) {
                set_err(err, TOK_EFORMAT, "'%s': bad zstd data: %s", path,
                        ZSTD_getErrorName(last));
                rc = TOK_EFORMAT;
            } else if (fwrite(obuf.data(), 1, ob.pos, dst) != ob.pos) {
                set_err(err, TOK_EIO, "cannot write '%s': %s", name.data(),
                        strerror(errno));
                rc = TOK_EIO;
            }
        }
    }
    ZSTD_freeDStream(zds);
    if (fclose(dst) != 0 && rc == 0) {
        set_err(err, TOK_EIO, "cannot write '%s': %s", name.data(),
                strerror(errno));
        rc = TOK_EIO;
    }
    *out = name.data();
    return rc;
}

/* Check that every input can be read, before sentencepiece (whose message
 * for a missing file does not say which), and decompress zstd inputs.
 * Fills *inputs with the paths to train on. */
int
prepare_inputs(const char *const *paths, size_t n, temp_files *tmps,
               std::vector<std::string> *inputs, struct tok_err *err)
{
    for (size_t i = 0; i < n; i++) {
        const char *path = paths[i];
        if (!path || !*path) {
            set_err(err, TOK_EINVAL, "an input path is empty");
            return TOK_EINVAL;
        }
        FILE *fp = fopen(path, "rb");
        if (!fp) {
            set_err(err, TOK_EIO, "cannot open '%s': %s", path,
                    strerror(errno));
            return TOK_EIO;
        }
        unsigned char magic[4];
        size_t got = fread(magic, 1, sizeof magic, fp);
        if (got < sizeof magic && ferror(fp)) {
            /* A directory opens but cannot be read (EISDIR). */
            set_err(err, TOK_EIO, "cannot read '%s': %s", path,
                    strerror(errno));
            fclose(fp);
            return TOK_EIO;
        }
        if (got == 4 && magic[0] == 0x28 && magic[1] == 0xB5 &&
            magic[2] == 0x2F && magic[3] == 0xFD) {
            std::string plain;
            rewind(fp);
            int rc = unzstd_to_temp(path, fp, tmps, &plain, err);
            fclose(fp);
            if (rc != 0)
                return rc;
            inputs->push_back(plain);
        } else {
            fclose(fp);
            inputs->push_back(path);
        }
    }
    return 0;
}

/* Write data to "<path>.tmp.<pid>"; on success the name goes to *tmp. */
int
write_temp(const std::string &path, const std::string &data, temp_files *tmps,
           std::string *tmp, struct tok_err *err)
{
    *tmp = path + ".tmp." + std::to_string(static_cast<long>(getpid()));
    FILE *fp = fopen(tmp->c_str(), "wb");
    if (!fp) {
        set_err(err, TOK_EIO, "cannot create '%s': %s", tmp->c_str(),
                strerror(errno));
        return TOK_EIO;
    }
    tmps->paths.push_back(*tmp);
    bool ok = fwrite(data.data(), 1, data.size(), fp) == data.size();
    ok = fflush(fp) == 0 && ok;
    int saved = errno;
    if (fclose(fp) != 0 && ok) {
        saved = errno;
        ok = false;
    }
    if (!ok) {
        set_err(err, TOK_EIO, "cannot write '%s': %s", tmp->c_str(),
                strerror(saved));
        return TOK_EIO;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* model_prefix in the serialized model                                      */

/* Protobuf wire format, as much as a ModelProto needs.  Reads a varint at
 * *pos; false if s ends first. */
bool
read_varint(const std::string &s, size_t *pos, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *pos < s.size(); shift += 7) {
        const unsigned char b = static_cast<unsigned char>(s[(*pos)++]);
        *v |= static_cast<uint64_t>(b & 0x7F) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

void
put_varint(std::string *out, uint64_t v)
{
    do {
        const unsigned char b = v & 0x7F;
        v >>= 7;
        out->push_back(static_cast<char>(v ? b | 0x80 : b));
    } while (v);
}

/* Split s into its fields: (number, bytes of the whole field).  False if
 * s is not a well-formed message. */
bool
split_fields(const std::string &s,
             std::vector<std::pair<uint64_t, std::string>> *fields)
{
    size_t pos = 0;
    while (pos < s.size()) {
        const size_t start = pos;
        uint64_t key, v;
        if (!read_varint(s, &pos, &key))
            return false;
        switch (key & 7) {
        case 0:
            if (!read_varint(s, &pos, &v))
                return false;
            break;
        case 1:
            pos += 8;
            break;
        case 2:
            if (!read_varint(s, &pos, &v) || v > s.size() - pos)
                return false;
            pos += v;
            break;
        case 5:
            pos += 4;
            break;
        default:
            return false;
        }
        if (pos > s.size())
            return false;
        fields->emplace_back(key >> 3, s.substr(start, pos - start));
    }
    return true;
}

/* The serialized field `number` (length-delimited) holding `value`. */
std::string
bytes_field(uint64_t number, const std::string &value)
{
    std::string f;
    put_varint(&f, number << 3 | 2);
    put_varint(&f, value.size());
    return f + value;
}

/* sentencepiece trains into memory only with an empty model_prefix, and
 * spm_train's model records its prefix: set trainer_spec.model_prefix
 * (ModelProto field 2, TrainerSpec field 2) in the serialized model,
 * where protobuf puts it, after the inputs (field 1) and before field 3. */
bool
set_model_prefix(std::string *model, const std::string &prefix)
{
    std::vector<std::pair<uint64_t, std::string>> top, spec;
    if (!split_fields(*model, &top))
        return false;
    std::string out;
    bool done = false;
    for (const auto &f : top) {
        if (f.first != 2) {
            out += f.second;
            continue;
        }
        size_t pos = 0;
        uint64_t key, len;
        if (!read_varint(f.second, &pos, &key) ||
            !read_varint(f.second, &pos, &len) ||
            !split_fields(f.second.substr(pos), &spec))
            return false;
        std::string body;
        bool put = false;
        for (const auto &g : spec) {
            if (!put && g.first >= 2) {
                body += bytes_field(2, prefix);
                put = true;
            }
            if (g.first != 2)
                body += g.second;
        }
        if (!put)
            body += bytes_field(2, prefix);
        out += bytes_field(2, body);
        done = true;
    }
    if (done)
        *model = out;
    return done;
}

/* The .vocab text of a serialized model, as TrainerInterface::SaveVocab
 * writes it: "piece<TAB>score\n", the score through an ostream. */
int
vocab_text(const std::string &model, std::string *out, struct tok_err *err)
{
    sentencepiece::SentencePieceProcessor sp;
    const auto status = sp.LoadFromSerializedProto(model);
    if (!status.ok()) {
        set_err(err, TOK_EFORMAT, "cannot read the trained model: %s",
                status.message());
        return TOK_EFORMAT;
    }
    std::ostringstream os;
    for (int id = 0; id < sp.GetPieceSize(); id++)
        os << sp.IdToPiece(id) << "\t" << sp.GetScore(id) << "\n";
    *out = os.str();
    return 0;
}

/* sentencepiece's message without the "./src/x.cc(N) [condition] " that
 * its CHECK_OR_RETURN puts first: what is left says what to do. */
const char *
reason(const char *msg)
{
    const char *open = strstr(msg, ") [");
    const char *close = open ? strstr(open, "] ") : nullptr;
    return close && close[2] ? close + 2 : msg;
}

int
train(const char *const *input_paths, size_t n_inputs, size_t vocab_size,
      unsigned n_threads, const char *vocab_path, const char *model_path,
      int quiet, struct tok_err *err)
{
    if (n_inputs == 0 || !input_paths) {
        set_err(err, TOK_EINVAL, "no input file");
        return TOK_EINVAL;
    }
    if (vocab_size < 1 || vocab_size > INT32_MAX) {
        set_err(err, TOK_EINVAL, "vocab size %zu is out of range", vocab_size);
        return TOK_EINVAL;
    }
    if (!vocab_path || !*vocab_path || (model_path && !*model_path)) {
        set_err(err, TOK_EINVAL, "an output path is empty");
        return TOK_EINVAL;
    }
    /* The model records model_prefix: spm_train's P for P.vocab. */
    std::string prefix = vocab_path;
    const std::string ext = ".vocab";
    if (prefix.size() > ext.size() &&
        prefix.compare(prefix.size() - ext.size(), ext.size(), ext) == 0)
        prefix.resize(prefix.size() - ext.size());
    if (n_threads == 0)
        n_threads = kSpmDefaultThreads;
    if (n_threads > kSpmMaxThreads) {
        set_err(err, TOK_EINVAL, "%u threads: sentencepiece takes 1 to %u",
                n_threads, kSpmMaxThreads);
        return TOK_EINVAL;
    }

    temp_files tmps;
    std::vector<std::string> inputs;
    int rc = prepare_inputs(input_paths, n_inputs, &tmps, &inputs, err);
    if (rc != 0)
        return rc;
    std::string input_csv;
    for (const auto &p : inputs)
        input_csv += (input_csv.empty() ? "" : ",") + csv_field(p);

    /* spm_train's main() sets each of these from a flag, so each is
     * present in the model's trainer_spec even at its default: set them
     * all, with the flags' defaults, or the .model differs. */
    const std::unordered_map<std::string, std::string> args = {
        { "input", input_csv },
        { "input_format", "" },
        { "model_prefix", "" }, /* see set_model_prefix() */
        { "model_type", "bpe" },
        { "vocab_size", std::to_string(vocab_size) },
        { "self_test_sample_size", "0" },
        { "character_coverage", "0.9995" },
        { "input_sentence_size", "0" },
        { "shuffle_input_sentence", "true" },
        { "seed_sentencepiece_size", "1000000" },
        { "shrinking_factor", "0.75" },
        { "num_threads", std::to_string(n_threads) },
        { "num_sub_iterations", "2" },
        { "max_sentencepiece_length", "16" },
        { "max_sentence_length", "4192" },
        { "split_by_unicode_script", "true" },
        { "split_by_whitespace", "true" },
        { "split_by_number", "true" },
        { "split_digits", "false" },
        { "byte_fallback", "false" },
        { "treat_whitespace_as_suffix", "false" },
        { "allow_whitespace_only_pieces", "false" },
        { "hard_vocab_limit", "true" },
        { "use_all_vocab", "false" },
        { "unk_id", "0" },
        { "bos_id", "1" },
        { "eos_id", "2" },
        { "pad_id", "-1" },
        { "unk_piece", "<unk>" },
        { "bos_piece", "<s>" },
        { "eos_piece", "</s>" },
        { "pad_piece", "<pad>" },
        { "unk_surface", " \xE2\x81\x87 " },
        { "required_chars", "" },
        { "vocabulary_output_piece_score", "true" },
        { "train_extremely_large_corpus", "false" },
        { "enable_differential_privacy", "false" },
        { "differential_privacy_noise_level", "0" },
        { "differential_privacy_clipping_threshold", "0" },
        { "normalization_rule_name", "nmt_nfkc" },
        { "normalization_rule_tsv", "" },
        { "add_dummy_prefix", "true" },
        { "remove_extra_whitespaces", "true" },
        /* Global in sentencepiece: set on every call.  Errors come back
         * in the status, so quiet drops its warnings too. */
        { "minloglevel", quiet ? "2" : "0" },
    };

    /* Train into memory, so that sentencepiece writes no file and ours
     * can go through temporary names. */
    std::string model;
    const auto status =
        sentencepiece::SentencePieceTrainer::Train(args, nullptr, &model);
    if (status.ok() && !set_model_prefix(&model, prefix)) {
        set_err(err, TOK_EFORMAT, "cannot read the trained model");
        return TOK_EFORMAT;
    }
    if (!status.ok()) {
        const char *msg = status.message();
        /* An empty corpus fails an internal check: say what it means. */
        if (strstr(msg, "!sentences_.empty()"))
            set_err(err, TOK_EINVAL,
                    "no text to train on in the input (empty, or only "
                    "empty lines)");
        else
            set_err(err, TOK_EINVAL, "sentencepiece: %s", reason(msg));
        return TOK_EINVAL;
    }

    std::string vocab, vocab_tmp, model_tmp;
    rc = vocab_text(model, &vocab, err);
    if (rc == 0)
        rc = write_temp(vocab_path, vocab, &tmps, &vocab_tmp, err);
    if (rc == 0 && model_path)
        rc = write_temp(model_path, model, &tmps, &model_tmp, err);
    if (rc != 0)
        return rc;
    if (model_path && rename(model_tmp.c_str(), model_path) != 0) {
        set_err(err, TOK_EIO, "cannot rename '%s' to '%s': %s",
                model_tmp.c_str(), model_path, strerror(errno));
        return TOK_EIO;
    }
    if (rename(vocab_tmp.c_str(), vocab_path) != 0) {
        set_err(err, TOK_EIO, "cannot rename '%s' to '%s': %s",
                vocab_tmp.c_str(), vocab_path, strerror(errno));
        return TOK_EIO;
    }
    return 0;
}

} // namespace

extern "C" int
vocab_spm_train(const char *const *input_paths, size_t n_inputs,
                size_t vocab_size, unsigned n_threads, const char *vocab_path,
                const char *model_path, int quiet, struct tok_err *err)
{
    try {
        return train(input_paths, n_inputs, vocab_size, n_threads, vocab_path,
                     model_path, quiet, err);
    } catch (const std::bad_alloc &) {
        set_err(err, TOK_ENOMEM, "out of memory training sentencepiece");
        return TOK_ENOMEM;
    } catch (const std::exception &e) {
        set_err(err, TOK_EINVAL, "sentencepiece: %s", e.what());
        return TOK_EINVAL;
    } catch (...) {
        set_err(err, TOK_EINVAL, "sentencepiece: unknown exception");
        return TOK_EINVAL;
    }
}
