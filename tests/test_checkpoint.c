/* test_checkpoint.c — checkpoint files (record/checkpoint.h) and resuming a
 * trainer from one (engine/core/train.h).
 *
 * The format is checked against an image assembled here field by field with
 * libxxhash's own XXH3_64bits (the independent path), not against the
 * module's encoder. Bad files are made from a good one: every truncation
 * length, every single-byte flip, a wrong magic or version (with the checksum
 * made good again, so the field itself is what is refused), and sound files
 * of another config, model size or optimiser. Resuming is checked bit for bit
 * against uninterrupted runs: a checkpoint written at one thread and loaded
 * at 3 and 8, at several steps, across an epoch boundary, with AdamW and SGD;
 * and two foils (a resume that forgets the optimiser state or the step)
 * must differ, so the comparison can fail. Owners: a version-2 file names
 * its database and run, and a load that lists the accepted identities
 * refuses another database's or another run's file; version-1 files (no
 * owner) still load; ckpt_read_head reads whose a file is from its header
 * alone, and says nothing is a checkpoint that is not.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <xxhash.h>

#include "engine/core/train.h"
#include "engine/tasks/teacher.h"
#include "record/checkpoint.h"
#include "record/hash.h"

static char g_dir[64];

static int rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            rm_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    return rmdir(dir);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/ls-test-ckpt-XXXXXX");
    return mkdtemp(g_dir) == NULL ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    return rm_tree(g_dir);
}

static void tmp_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", g_dir, name);
}

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    unsigned char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void write_all(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* ---- the independent encoder -------------------------------------------------- */

static void le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t rd_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The image checkpoint.h describes, built byte by byte: version 2 with the
 * owner (db_id: 16 bytes, NULL for nobody's all zero; run), or version 1
 * (no owner, a 48-byte header). */
static unsigned char *hand_image_v(int version, const unsigned char *db_id, int64_t run, uint64_t cfg, int64_t step,
                                   const float *p, size_t n, const unsigned char *opt, size_t ob, size_t *len)
{
    const size_t h = version == 1 ? 48 : 72;
    *len = h + 4 * n + ob + 8;
    unsigned char *b = calloc(1, *len);
    assert_non_null(b);
    memcpy(b, "LKSTCKPT", 8);
    le(b + 8, (uint64_t)version, 4);
    le(b + 12, h, 4);
    le(b + 16, cfg, 8);
    le(b + 24, (uint64_t)step, 8);
    le(b + 32, n, 8);
    le(b + 40, ob, 8);
    if (version >= 2) {
        if (db_id != NULL)
            memcpy(b + 48, db_id, 16);
        le(b + 64, (uint64_t)run, 8);
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &p[i], 4);
        le(b + h + 4 * i, u, 4);
    }
    /* The optimiser block: 32-bit words, each little-endian. */
    for (size_t i = 0; i + 4 <= ob; i += 4) {
        uint32_t u;
        memcpy(&u, opt + i, 4);
        le(b + h + 4 * n + i, u, 4);
    }
    le(b + *len - 8, XXH3_64bits(b, *len - 8), 8);
    return b;
}

static unsigned char *hand_image(uint64_t cfg, int64_t step, const float *p, size_t n, const unsigned char *opt,
                                 size_t ob, size_t *len)
{
    return hand_image_v(2, NULL, 0, cfg, step, p, n, opt, ob, len);
}

/* Makes a modified image consistent again: a new checksum over its bytes. */
static void reseal(unsigned char *b, size_t len)
{
    le(b + len - 8, XXH3_64bits(b, len - 8), 8);
}

/* A small state with awkward values: signed zeros, a denormal, a NaN payload,
 * infinities — a checkpoint keeps bits, it does not canonicalise them. */
#define NP 13
#define OB 40
static float P[NP];
static unsigned char O[OB];
static const uint64_t CFG = UINT64_C(0x0123456789abcdef);
#define CKPT_KNOWN_STATE_HASH UINT64_C(0x178a735c9c9043da)

static void fill_state(void)
{
    const uint32_t bits[NP] = { 0x00000000u, 0x80000000u, 0x00000001u, 0x7fc12345u, 0xffc00000u, 0x7f800000u,
                                0xff800000u, 0x3f800000u, 0xbf8ccccdu, 0x12345678u, 0x7f7fffffu, 0x00800000u,
                                0x40490fdbu };
    for (int i = 0; i < NP; i++)
        memcpy(&P[i], &bits[i], 4);
    /* The optimiser block is 32-bit words (checkpoint.h): defined as word
     * values, so the file's bytes are the same on either byte order. */
    for (int i = 0; i < OB / 4; i++) {
        const uint32_t w = (uint32_t)i * UINT32_C(0x9e3779b9) + 11u;
        memcpy(O + 4 * i, &w, 4);
    }
}

/* ---- format and round trip -------------------------------------------------------- */

static void test_roundtrip_and_format(void **state)
{
    (void)state;
    fill_state();
    char path[256];
    tmp_path(path, sizeof path, "a.ckpt");
    uint64_t sh = 0;
    ls_err err = { "" };
    assert_int_equal(ckpt_save(path, CFG, 1234, P, NP, O, OB, &sh, &err), LS_OK);

    /* Byte for byte the independently built image; the state hash is its checksum. */
    size_t len, hlen;
    unsigned char *file = read_all(path, &len);
    unsigned char *hand = hand_image(CFG, 1234, P, NP, O, OB, &hlen);
    assert_int_equal(len, hlen);
    assert_int_equal(len, ckpt_image_bytes(NP, OB));
    assert_memory_equal(file, hand, len);
    assert_true(sh == XXH3_64bits(file, len - 8));
    assert_true(sh == rd_le64(file + len - 8));
    /* The same bytes on every host and byte order (make check-cross runs this
     * on big-endian s390x): the state hash of this image, frozen with the
     * format. */
    if (sh != CKPT_KNOWN_STATE_HASH)
        fail_msg("state hash %016llx, the format's known answer is %016llx", (unsigned long long)sh,
                 (unsigned long long)CKPT_KNOWN_STATE_HASH);

    /* ckpt_encode writes the same image. */
    unsigned char *enc = malloc(len);
    assert_non_null(enc);
    uint64_t sh2 = 0;
    assert_int_equal(ckpt_encode(enc, len, CFG, 1234, P, NP, O, OB, &sh2, &err), LS_OK);
    assert_memory_equal(enc, hand, len);
    assert_true(sh2 == sh);
    assert_int_equal(ckpt_encode(enc, len - 1, CFG, 1234, P, NP, O, OB, NULL, &err), LS_EINVAL);
    free(enc);

    /* The parsed view points at the right bytes. */
    ckpt_view v;
    assert_int_equal(ckpt_parse(file, len, "x", &v, &err), LS_OK);
    assert_int_equal(v.version, 2);
    assert_int_equal(v.header_bytes, 72);
    assert_true(v.config_hash == CFG);
    assert_int_equal(v.step, 1234);
    assert_int_equal(v.n_params, NP);
    assert_int_equal(v.opt_bytes, OB);
    assert_true(v.has_owner);
    assert_int_equal(v.owner.run_id, 0);
    assert_ptr_equal(v.params, file + 72);
    assert_ptr_equal(v.opt_state, file + 72 + 4 * NP);
    assert_true(v.checksum == sh);

    /* Load: exact bits back, and the temporary file is gone. */
    float q[NP];
    unsigned char o[OB];
    int64_t step = -1;
    ckpt_expect want = { CFG, NP, OB, NULL, 0, 0 };
    ckpt_info info;
    assert_int_equal(ckpt_load_checked(path, &want, q, o, &info, &err), LS_OK);
    assert_int_equal(info.step, 1234);
    assert_int_equal(info.version, 2);
    assert_memory_equal(q, P, sizeof q);
    assert_memory_equal(o, O, OB);
    assert_true(info.state_hash == sh);
    memset(q, 0, sizeof q);
    assert_int_equal(ckpt_load(path, CFG, NP, OB, &step, q, o, &err), LS_OK);
    assert_memory_equal(q, P, sizeof q);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_equal(access(tmp, F_OK), -1);

    /* Saving again replaces the file (rename over it). */
    assert_int_equal(ckpt_save(path, CFG, 99, P, NP, O, OB, NULL, &err), LS_OK);
    assert_int_equal(ckpt_load(path, CFG, NP, OB, &step, q, o, &err), LS_OK);
    assert_int_equal(step, 99);

    /* Empty parameter and state blocks are legal images. */
    assert_int_equal(ckpt_save(path, CFG, 0, NULL, 0, NULL, 0, NULL, &err), LS_OK);
    assert_int_equal(ckpt_load(path, CFG, 0, 0, &step, q, o, &err), LS_OK);
    assert_int_equal(step, 0);
    free(file);
    free(hand);
}

/* A checkpoint that does not load leaves the caller's buffers untouched. */
static void expect_untouched(const float *q, const unsigned char *o, int64_t step)
{
    for (int i = 0; i < NP; i++) {
        uint32_t u;
        memcpy(&u, &q[i], 4);
        assert_int_equal(u, 0xdeadbeefu);
    }
    for (int i = 0; i < OB; i++)
        assert_int_equal(o[i], 0xa5);
    assert_int_equal(step, -7);
}

static void poison(float *q, unsigned char *o, int64_t *step)
{
    uint32_t u = 0xdeadbeefu;
    for (int i = 0; i < NP; i++)
        memcpy(&q[i], &u, 4);
    memset(o, 0xa5, OB);
    *step = -7;
}

static void test_truncated_every_length(void **state)
{
    (void)state;
    fill_state();
    size_t len;
    unsigned char *img = hand_image(CFG, 5, P, NP, O, OB, &len);
    ls_err err;
    ckpt_view v;
    /* Every prefix, in memory: refused, naming the source. */
    for (size_t k = 0; k < len; k++) {
        err.msg[0] = 0;
        ls_status st = ckpt_parse(img, k, "trunc.ckpt", &v, &err);
        if (st != LS_EFORMAT || strstr(err.msg, "trunc.ckpt") == NULL)
            fail_msg("prefix of %zu/%zu bytes: status %d, '%s'", k, len, (int)st, err.msg);
    }
    /* Every length past the magic also says "truncated". */
    for (size_t k = 8; k < len; k++) {
        ckpt_parse(img, k, "t", &v, &err);
        assert_non_null(strstr(err.msg, "truncated"));
    }
    /* And as files, at a sample of lengths including 0 and len-1. */
    char path[256];
    tmp_path(path, sizeof path, "trunc.ckpt");
    const size_t lens[] = { 0, 1, 7, 8, 47, 48, 55, 56, 60, len / 2, len - 9, len - 8, len - 1 };
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        write_all(path, img, lens[i]);
        float q[NP];
        unsigned char o[OB];
        int64_t step;
        poison(q, o, &step);
        err.msg[0] = 0;
        ls_status st = ckpt_load(path, CFG, NP, OB, &step, q, o, &err);
        if (st != LS_EFORMAT || strstr(err.msg, path) == NULL)
            fail_msg("file of %zu bytes: status %d, '%s'", lens[i], (int)st, err.msg);
        expect_untouched(q, o, step);
    }
    /* Trailing bytes are refused too. */
    unsigned char *longer = calloc(1, len + 3);
    assert_non_null(longer);
    memcpy(longer, img, len);
    assert_int_equal(ckpt_parse(longer, len + 3, "long", &v, &err), LS_EFORMAT);
    free(longer);
    free(img);
}

static void test_flipped_bytes(void **state)
{
    (void)state;
    fill_state();
    size_t len;
    unsigned char *img = hand_image(CFG, 5, P, NP, O, OB, &len);
    ls_err err;
    ckpt_view v;
    int checksum_named = 0;
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            img[i] ^= (unsigned char)(1u << bit);
            err.msg[0] = 0;
            ls_status st = ckpt_parse(img, len, "flip.ckpt", &v, &err);
            if (st != LS_EFORMAT || strstr(err.msg, "flip.ckpt") == NULL)
                fail_msg("bit %d of byte %zu flipped: status %d, '%s'", bit, i, (int)st, err.msg);
            /* Outside the magic, version and sizes, only the checksum can tell. */
            if (i >= 48 || (i >= 16 && i < 32)) {
                if (strstr(err.msg, "checksum") == NULL)
                    fail_msg("bit %d of byte %zu flipped: '%s' does not name the checksum", bit, i, err.msg);
                checksum_named++;
            }
            img[i] ^= (unsigned char)(1u << bit);
        }
    }
    assert_int_equal(ckpt_parse(img, len, "flip.ckpt", &v, &err), LS_OK);
    /* Through a file as well. */
    char path[256];
    tmp_path(path, sizeof path, "flip.ckpt");
    img[60] ^= 0x10;
    write_all(path, img, len);
    float q[NP];
    unsigned char o[OB];
    int64_t step;
    poison(q, o, &step);
    assert_int_equal(ckpt_load(path, CFG, NP, OB, &step, q, o, &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "checksum"));
    expect_untouched(q, o, step);
    printf("flips: %zu single-bit flips refused, %d named the checksum\n", len * 8, checksum_named);
    free(img);
}

static void test_magic_version_header(void **state)
{
    (void)state;
    fill_state();
    size_t len;
    unsigned char *img = hand_image(CFG, 5, P, NP, O, OB, &len);
    ls_err err;
    ckpt_view v;

    memcpy(img, "LKSTGOLD", 8);
    reseal(img, len);
    assert_int_equal(ckpt_parse(img, len, "m", &v, &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, "magic"));
    memcpy(img, "LKSTCKPT", 8);

    le(img + 8, 3, 4);
    reseal(img, len);
    assert_int_equal(ckpt_parse(img, len, "m", &v, &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, "version 3"));
    assert_int_equal(ckpt_parse_any(img, len, "m", &v, &err), LS_EFORMAT);
    le(img + 8, 0, 4);
    reseal(img, len);
    assert_int_equal(ckpt_parse(img, len, "m", &v, &err), LS_EFORMAT);
    /* Version 1 in a version-2 layout: its header size is 48. */
    le(img + 8, 1, 4);
    reseal(img, len);
    assert_int_equal(ckpt_parse_any(img, len, "m", &v, &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, "header"));
    le(img + 8, 2, 4);

    le(img + 12, 56, 4);
    reseal(img, len);
    assert_int_equal(ckpt_parse(img, len, "m", &v, &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, "header"));
    le(img + 12, 48, 4);
    reseal(img, len);
    assert_int_equal(ckpt_parse(img, len, "m", &v, &err), LS_EFORMAT);
    le(img + 12, 72, 4);

    /* Sizes that would overflow or point past the end. */
    le(img + 32, UINT64_MAX / 2, 8);
    reseal(img, len);
    assert_int_equal(ckpt_parse(img, len, "m", &v, &err), LS_EFORMAT);
    le(img + 32, NP, 8);
    le(img + 40, UINT64_MAX - 10, 8);
    reseal(img, len);
    assert_int_equal(ckpt_parse(img, len, "m", &v, &err), LS_EFORMAT);
    le(img + 40, OB + 4, 8);
    le(img + 32, NP - 1, 8);   /* same total length, other split: sound, and parsed as such */
    reseal(img, len);
    assert_int_equal(ckpt_parse(img, len, "m", &v, &err), LS_OK);
    assert_int_equal(v.n_params, NP - 1);
    le(img + 40, OB, 8);
    le(img + 32, NP, 8);

    /* A negative step. */
    le(img + 24, UINT64_MAX, 8);
    reseal(img, len);
    assert_int_equal(ckpt_parse(img, len, "m", &v, &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, "negative"));
    le(img + 24, 5, 8);
    reseal(img, len);
    assert_int_equal(ckpt_parse(img, len, "m", &v, &err), LS_OK);

    assert_int_equal(ckpt_parse(NULL, 0, NULL, &v, &err), LS_EFORMAT);
    assert_int_equal(ckpt_image_bytes(SIZE_MAX / 2, 0), 0);
    assert_int_equal(ckpt_image_bytes(1, SIZE_MAX - 10), 0);
    free(img);
}

static void test_mismatches(void **state)
{
    (void)state;
    fill_state();
    char path[256];
    tmp_path(path, sizeof path, "m.ckpt");
    ls_err err;
    assert_int_equal(ckpt_save(path, CFG, 3, P, NP, O, OB, NULL, &err), LS_OK);
    float q[NP];
    unsigned char o[OB];
    int64_t step;

    poison(q, o, &step);
    assert_int_equal(ckpt_load(path, CFG ^ 1, NP, OB, &step, q, o, &err), LS_EMISMATCH);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "config"));
    expect_untouched(q, o, step);

    assert_int_equal(ckpt_load(path, CFG, NP - 1, OB, &step, q, o, &err), LS_EMISMATCH);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "parameters"));
    expect_untouched(q, o, step);

    assert_int_equal(ckpt_load(path, CFG, NP, OB + 8, &step, q, o, &err), LS_EMISMATCH);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "optimiser"));
    expect_untouched(q, o, step);

    char missing[256];
    tmp_path(missing, sizeof missing, "nope.ckpt");
    assert_int_equal(ckpt_load(missing, CFG, NP, OB, &step, q, o, &err), LS_ENOTFOUND);
    assert_non_null(strstr(err.msg, missing));
    /* A directory is not a checkpoint; a file where the directory should be cannot take one. */
    assert_int_equal(ckpt_load(g_dir, CFG, NP, OB, &step, q, o, &err), LS_EIO);
    char under[300];
    snprintf(under, sizeof under, "%s/sub.ckpt", path);
    assert_int_equal(ckpt_save(under, CFG, 3, P, NP, O, OB, NULL, &err), LS_EIO);
    assert_non_null(strstr(err.msg, under));
    expect_untouched(q, o, step);
}

/* The hook runs once per save with half of the temporary file written and
 * the final name not yet there. */
static char hook_path[256];
static int hook_calls;
static long hook_tmp_size, hook_final_exists;

static void hook(void)
{
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", hook_path);
    struct stat sb;
    hook_tmp_size = stat(tmp, &sb) == 0 ? (long)sb.st_size : -1;
    hook_final_exists = access(hook_path, F_OK) == 0;
    hook_calls++;
}

static void test_crash_hook(void **state)
{
    (void)state;
    fill_state();
    tmp_path(hook_path, sizeof hook_path, "hook.ckpt");
    ckpt_set_test_hook(hook);
    ls_err err;
    assert_int_equal(ckpt_save(hook_path, CFG, 3, P, NP, O, OB, NULL, &err), LS_OK);
    ckpt_set_test_hook(NULL);
    assert_int_equal(hook_calls, 1);
    assert_int_equal(hook_tmp_size, (long)ckpt_image_bytes(NP, OB) / 2);
    assert_int_equal(hook_final_exists, 0);
    assert_int_equal(ckpt_save(hook_path, CFG, 3, P, NP, O, OB, NULL, &err), LS_OK);
    assert_int_equal(hook_calls, 1);
}

/* ---- resuming a trainer ------------------------------------------------------------- */

#define STEPS 20

typedef struct {
    uint64_t traj[STEPS + 1];
    float *params;       /* final θ (malloc'ed) */
    void *opt;           /* final optimiser state (malloc'ed) */
    size_t n, ob;
} trace;

static void trace_free(trace *t)
{
    free(t->params);
    free(t->opt);
}

static void keep_final(trainer *t, trace *tr)
{
    tr->n = trainer_n_params(t);
    void *os = trainer_optim_state(t, &tr->ob);
    tr->params = malloc(tr->n * sizeof(float));
    tr->opt = malloc(tr->ob);
    assert_non_null(tr->params);
    assert_non_null(tr->opt);
    memcpy(tr->params, trainer_params(t), tr->n * sizeof(float));
    memcpy(tr->opt, os, tr->ob);
}

static void steps_to(trainer *t, int64_t to, uint64_t *traj, trace *tr)
{
    ls_err err;
    while (trainer_steps_done(t) < to) {
        double loss;
        assert_int_equal(trainer_step(t, &loss, &err), LS_OK);
        *traj = hash_traj_next(*traj, hash_params(trainer_params(t), trainer_n_params(t)), loss);
        tr->traj[trainer_steps_done(t)] = *traj;
    }
}

static void uninterrupted(ls_config cfg, const ls_dataset *d, trace *tr)
{
    trainer *t;
    ls_err err;
    assert_int_equal(trainer_create(&t, &cfg, 1, d, &err), LS_OK);
    char text[CONFIG_TEXT_MAX];
    config_text(&cfg, text, sizeof text);
    uint64_t traj = hash_traj0(text, hash_params(trainer_params(t), trainer_n_params(t)));
    tr->traj[0] = traj;
    steps_to(t, STEPS, &traj, tr);
    keep_final(t, tr);
    trainer_destroy(t);
}

enum { RESTORE_ALL, FORGET_OPTIM, FORGET_STEP };

/* Trains to `at` at one thread, checkpoints to a file, throws the trainer
 * away; a new trainer at `threads` loads the file (restoring what `mode`
 * says) and trains to STEPS. */
static void resumed(ls_config cfg, const ls_dataset *d, int64_t at, int threads, int mode, trace *tr)
{
    ls_err err;
    char path[256];
    tmp_path(path, sizeof path, "resume.ckpt");
    uint64_t traj;
    {
        trainer *t;
        /* trainer_create fills cfg.data_hash, part of the text and hash. */
        assert_int_equal(trainer_create(&t, &cfg, 1, d, &err), LS_OK);
        char text[CONFIG_TEXT_MAX];
        config_text(&cfg, text, sizeof text);
        traj = hash_traj0(text, hash_params(trainer_params(t), trainer_n_params(t)));
        tr->traj[0] = traj;
        steps_to(t, at, &traj, tr);
        size_t ob;
        void *os = trainer_optim_state(t, &ob);
        assert_int_equal(ckpt_save(path, config_hash(&cfg), at, trainer_params(t), trainer_n_params(t), os, ob,
                                   NULL, &err), LS_OK);
        trainer_destroy(t);
    }
    trainer *t;
    assert_int_equal(trainer_create(&t, &cfg, threads, d, &err), LS_OK);
    size_t ob;
    void *os = trainer_optim_state(t, &ob);
    void *scratch = malloc(ob);
    assert_non_null(scratch);
    int64_t step;
    assert_int_equal(ckpt_load(path, config_hash(&cfg), trainer_n_params(t), ob, &step, trainer_params_mut(t),
                               mode == FORGET_OPTIM ? scratch : os, &err), LS_OK);
    free(scratch);
    assert_int_equal(step, at);
    if (mode != FORGET_STEP)
        trainer_set_steps_done(t, step);
    /* The foil that forgets the step runs the same number of steps. */
    int64_t left = STEPS - at;
    while (left-- > 0) {
        double loss;
        assert_int_equal(trainer_step(t, &loss, &err), LS_OK);
        traj = hash_traj_next(traj, hash_params(trainer_params(t), trainer_n_params(t)), loss);
        at++;
        tr->traj[at] = traj;
    }
    keep_final(t, tr);
    trainer_destroy(t);
}

static void resume_matrix(const char *label, ls_config cfg, const ls_dataset *d)
{
    trace ref;
    uninterrupted(cfg, d, &ref);
    static const int64_t AT[] = { 0, 1, 7, 9, 13, 19, 20 };
    static const int THR[] = { 3, 8 };
    int checked = 0;
    for (size_t a = 0; a < sizeof AT / sizeof AT[0]; a++) {
        for (size_t k = 0; k < sizeof THR / sizeof THR[0]; k++) {
            trace tr;
            resumed(cfg, d, AT[a], THR[k], RESTORE_ALL, &tr);
            for (int s = 0; s <= STEPS; s++)
                if (tr.traj[s] != ref.traj[s])
                    fail_msg("%s: resumed at step %lld at %d threads: trajectory differs at step %d", label,
                             (long long)AT[a], THR[k], s);
            assert_int_equal(tr.n, ref.n);
            assert_int_equal(tr.ob, ref.ob);
            assert_memory_equal(tr.params, ref.params, ref.n * sizeof(float));
            assert_memory_equal(tr.opt, ref.opt, ref.ob);
            trace_free(&tr);
            checked++;
        }
    }
    /* The foils: forgetting the optimiser state, or the step (hence the data
     * order and the bias correction), must change the trajectory. */
    trace f1, f2;
    resumed(cfg, d, 7, 3, FORGET_OPTIM, &f1);
    resumed(cfg, d, 7, 3, FORGET_STEP, &f2);
    assert_true(f1.traj[STEPS] != ref.traj[STEPS]);
    assert_true(f2.traj[STEPS] != ref.traj[STEPS]);
    assert_true(f1.traj[7] == ref.traj[7]);
    trace_free(&f1);
    trace_free(&f2);
    trace_free(&ref);
    printf("%s: %d resumes (steps 0..20, 3 and 8 threads) equal the uninterrupted run bit for bit\n", label, checked);
}

static void test_resume_trainer(void **state)
{
    (void)state;
    ls_dataset *d;
    assert_int_equal(teacher_make(&d, NULL), LS_OK);
    ls_config cfg;
    /* AdamW (β products in the state), default batch. */
    assert_int_equal(config_defaults(&cfg, "teacher", NULL, NULL), LS_OK);
    assert_int_equal(config_set(&cfg, "hidden", "16", 0, NULL), LS_OK);
    resume_matrix("adamw", cfg, d);
    /* SGD with momentum, a batch that crosses the epoch boundary (2048
     * samples) during step 9, a partial last leaf. */
    assert_int_equal(config_defaults(&cfg, "teacher", NULL, NULL), LS_OK);
    assert_int_equal(config_set(&cfg, "hidden", "16", 0, NULL), LS_OK);
    assert_int_equal(config_set(&cfg, "optimizer", "sgd", 0, NULL), LS_OK);
    assert_int_equal(config_set(&cfg, "batch", "250", 0, NULL), LS_OK);
    assert_int_equal(config_set(&cfg, "leaf", "16", 0, NULL), LS_OK);
    resume_matrix("sgd-epochs", cfg, d);
    dataset_destroy(d);
}


/* ---- owners and version 1 ------------------------------------------------------------ */

static void test_owner_and_v1(void **state)
{
    (void)state;
    fill_state();
    ls_err err = { "" };
    const unsigned char mine[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    unsigned char other[16], ancestor[16];
    memcpy(other, mine, 16);
    other[15] ^= 0x80;
    memset(ancestor, 0x5a, 16);
    ckpt_owner me;
    memcpy(me.db_id, mine, 16);
    me.run_id = 7;

    /* Written with an owner: byte for byte the hand-made version-2 image. */
    char path[256];
    tmp_path(path, sizeof path, "own.ckpt");
    uint64_t sh;
    assert_int_equal(ckpt_save_owned(path, &me, CFG, 40, P, NP, O, OB, &sh, &err), LS_OK);
    size_t len, hlen;
    unsigned char *file = read_all(path, &len);
    unsigned char *hand = hand_image_v(2, mine, 7, CFG, 40, P, NP, O, OB, &hlen);
    assert_int_equal(len, hlen);
    assert_memory_equal(file, hand, len);
    ckpt_view v;
    assert_int_equal(ckpt_parse(file, len, "own", &v, &err), LS_OK);
    assert_true(v.has_owner);
    assert_memory_equal(v.owner.db_id, mine, 16);
    assert_int_equal(v.owner.run_id, 7);
    unsigned char *enc = malloc(len);
    assert_non_null(enc);
    assert_int_equal(ckpt_encode_owned(enc, len, &v.owner, v.config_hash, v.step, P, NP, O, OB, NULL, &err), LS_OK);
    assert_memory_equal(enc, file, len);
    free(enc);

    /* Loads accept the listed identities (here: an ancestor, then ours) and the run. */
    float q[NP];
    unsigned char o[OB];
    int64_t step;
    unsigned char ids[32];
    memcpy(ids, ancestor, 16);
    memcpy(ids + 16, mine, 16);
    ckpt_expect want = { CFG, NP, OB, ids, 2, 7 };
    ckpt_info info;
    assert_int_equal(ckpt_load_checked(path, &want, q, o, &info, &err), LS_OK);
    assert_int_equal(info.step, 40);
    assert_true(info.state_hash == sh);
    assert_memory_equal(q, P, sizeof q);
    /* Another database: refused, naming the file and "another database"; nothing written. */
    memcpy(ids + 16, other, 16);
    poison(q, o, &step);
    assert_int_equal(ckpt_load_checked(path, &want, q, o, NULL, &err), LS_EMISMATCH);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "another database"));
    expect_untouched(q, o, step);
    /* Another run of the same database. */
    memcpy(ids + 16, mine, 16);
    want.run_id = 8;
    assert_int_equal(ckpt_load_checked(path, &want, q, o, NULL, &err), LS_EMISMATCH);
    assert_non_null(strstr(err.msg, "run 7"));
    expect_untouched(q, o, step);
    /* The header alone says whose it is. */
    assert_int_equal(ckpt_read_head(path, &info, &err), LS_OK);
    assert_int_equal(info.version, 2);
    assert_true(info.has_owner);
    assert_memory_equal(info.owner.db_id, mine, 16);
    assert_int_equal(info.owner.run_id, 7);
    assert_int_equal(info.step, 40);

    /* Version 1: refused by the strict parser, read by ckpt_parse_any and
     * the loaders (no owner to check), and its header says no owner. */
    unsigned char *v1 = hand_image_v(1, NULL, 0, CFG, 12, P, NP, O, OB, &hlen);
    assert_int_equal(ckpt_parse(v1, hlen, "v1", &v, &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, "version 1"));
    assert_int_equal(ckpt_parse_any(v1, hlen, "v1", &v, &err), LS_OK);
    assert_int_equal(v.version, 1);
    assert_int_equal(v.header_bytes, 48);
    assert_false(v.has_owner);
    assert_ptr_equal(v.params, v1 + 48);
    char p1[256];
    tmp_path(p1, sizeof p1, "v1.ckpt");
    write_all(p1, v1, hlen);
    want.run_id = 7;
    assert_int_equal(ckpt_load_checked(p1, &want, q, o, &info, &err), LS_OK);
    assert_int_equal(info.version, 1);
    assert_false(info.has_owner);
    assert_int_equal(info.step, 12);
    assert_memory_equal(q, P, sizeof q);
    assert_memory_equal(o, O, OB);
    assert_int_equal(ckpt_read_head(p1, &info, &err), LS_OK);
    assert_false(info.has_owner);
    /* Truncated v1 files are refused at every length. */
    for (size_t k = 0; k < hlen; k++)
        assert_int_equal(ckpt_parse_any(v1, k, "v1", &v, &err), LS_EFORMAT);

    /* Headers that are not checkpoint headers. */
    char g[256];
    tmp_path(g, sizeof g, "garbage.ckpt");
    write_all(g, (const unsigned char *)"this is not a checkpoint\n", 25);
    assert_int_equal(ckpt_read_head(g, &info, &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, g));
    write_all(g, file, 60);   /* a version-2 header cut short */
    assert_int_equal(ckpt_read_head(g, &info, &err), LS_EFORMAT);
    assert_int_equal(ckpt_read_head(g_dir, &info, &err), LS_EIO);
    tmp_path(g, sizeof g, "none.ckpt");
    assert_int_equal(ckpt_read_head(g, &info, &err), LS_ENOTFOUND);
    free(v1);
    free(file);
    free(hand);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_and_format),
        cmocka_unit_test(test_truncated_every_length),
        cmocka_unit_test(test_flipped_bytes),
        cmocka_unit_test(test_magic_version_header),
        cmocka_unit_test(test_mismatches),
        cmocka_unit_test(test_crash_hook),
        cmocka_unit_test(test_resume_trainer),
        cmocka_unit_test(test_owner_and_v1),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown) ? 1 : 0;
}
