/* test_golden.c — golden files: exact round trips, known rows, malformed
 * texts with their line numbers, and every prefix / many byte mutations of a
 * valid file (never a crash, never anything but OK or LS_EFORMAT); the
 * optional sources section written, read back and refused when malformed.
 *
 * Parsed texts are copied into buffers of exactly their length (no NUL after
 * them), so a read past the end shows under valgrind or ASan.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/golden.h"

/* A small local generator, so this test depends on no other module. */
static uint64_t sm_state;
static uint64_t sm_next(void)
{
    uint64_t z = (sm_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* noinline: gcc -O3 inlines it and then takes the stream's buffer for a
 * dangling pointer to the local `buf` (-Wdangling-pointer, a false alarm). */
__attribute__((noinline)) static char *write_to_string(const char *config, const ls_step *steps, size_t n,
                                                       size_t *len)
{
    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    assert_non_null(f);
    assert_int_equal(golden_write(f, config, steps, n), LS_OK);
    assert_int_equal(fclose(f), 0);
    *len = blen;
    return buf;
}

/* Parse exactly len bytes from a buffer that has nothing after them. */
static ls_status parse_exact(const char *text, size_t len, golden_file *g, ls_err *err)
{
    char *copy = malloc(len > 0 ? len : 1);
    assert_non_null(copy);
    memcpy(copy, text, len);
    ls_status st = golden_parse(copy, len, "t.golden", g, err);
    free(copy);
    return st;
}

static const char *const CONFIG = "batch=20\nlr=0x1.999999999999ap-4\nmodel=mlp\nseed=1\n";

/* Rows with random hashes and loss bits: random patterns (any double,
 * NaNs with payloads and sign included) plus the cases printf/strtod find
 * hard. */
static ls_step *random_steps(size_t n)
{
    static const uint64_t special[] = {
        UINT64_C(0x8000000000000000), /* -0.0 */
        UINT64_C(0x0000000000000000), /* +0.0 */
        UINT64_C(0x7ff8000000000000), /* canonical NaN */
        UINT64_C(0xfff8000000000001), /* negative NaN with payload */
        UINT64_C(0x7ff0000000000001), /* signalling NaN */
        UINT64_C(0x0000000000000001), /* smallest subnormal */
        UINT64_C(0x000fffffffffffff), /* largest subnormal */
        UINT64_C(0x0010000000000000), /* DBL_MIN */
        UINT64_C(0x7fefffffffffffff), /* DBL_MAX */
        UINT64_C(0x7ff0000000000000), /* inf */
        UINT64_C(0xfff0000000000000), /* -inf */
        UINT64_C(0x3fb999999999999a), /* 0.1 */
    };
    size_t ns = sizeof special / sizeof special[0];
    ls_step *s = calloc(n, sizeof *s);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++) {
        s[i].step = (int64_t)i;
        s[i].has_loss = i > 0;
        s[i].loss_bits = i == 0 ? 0 : i <= ns ? special[i - 1] : sm_next();
        s[i].param_hash = sm_next();
        s[i].traj_hash = sm_next();
    }
    return s;
}

static void test_round_trip(void **state)
{
    (void)state;
    sm_state = 42;
    for (int rep = 0; rep < 20; rep++) {
        size_t n = 1 + (size_t)(sm_next() % 300);
        if (rep == 0)
            n = 300;
        ls_step *steps = random_steps(n);
        size_t len;
        char *text = write_to_string(CONFIG, steps, n, &len);
        golden_file g;
        ls_err err = {{0}};
        assert_int_equal(parse_exact(text, len, &g, &err), LS_OK);
        assert_string_equal(g.config_text, CONFIG);
        assert_int_equal(g.n_steps, n);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(g.steps[i].step, (int64_t)i);
            assert_int_equal(g.steps[i].has_loss, steps[i].has_loss);
            assert_int_equal(g.steps[i].loss_bits, steps[i].loss_bits);
            assert_int_equal(g.steps[i].param_hash, steps[i].param_hash);
            assert_int_equal(g.steps[i].traj_hash, steps[i].traj_hash);
        }
        /* write(parse(write(x))) == write(x) */
        size_t len2;
        char *text2 = write_to_string(g.config_text, g.steps, g.n_steps, &len2);
        assert_int_equal(len2, len);
        assert_memory_equal(text2, text, len);
        golden_free(&g);
        golden_free(&g); /* a freed struct is accepted */
        free(text2);
        free(text);
        free(steps);
    }
}

/* Known rows. The "%.17g" texts were printed by python3 ('%.17g' % v, with
 * v from struct.unpack('>d', bytes.fromhex(bits))): an independent printf. */
static void test_format_known(void **state)
{
    (void)state;
    static const struct {
        uint64_t bits;
        const char *text;
    } known[] = {
        {UINT64_C(0x3fb999999999999a), "0.10000000000000001"},
        {UINT64_C(0x8000000000000000), "-0"},
        {UINT64_C(0x0000000000000001), "4.9406564584124654e-324"},
        {UINT64_C(0x3fd5555555555555), "0.33333333333333331"},
        {UINT64_C(0x00002e055c9a3f6c), "2.5000000000000171e-310"},
        {UINT64_C(0x7e37e43c8800759c), "1.0000000000000001e+300"},
        {UINT64_C(0x7ff0000000000000), "inf"},
        {UINT64_C(0xfff0000000000000), "-inf"},
        {UINT64_C(0x40026bb1bbb55516), "2.3025850929940459"},
        {UINT64_C(0x419d6f3454800000), "123456789.125"},
        {UINT64_C(0x3ff0000000000000), "1"},
        {UINT64_C(0x7ff8000000000000), "nan"},
        {UINT64_C(0xfff8000000000000), "nan"}, /* glibc would print -nan */
        {UINT64_C(0x7ff0000000000001), "nan"},
    };
    char buf[160], want[160];
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        ls_step s = {.step = 7, .has_loss = 1, .loss_bits = known[i].bits,
                     .param_hash = UINT64_C(0x0123456789abcdef), .traj_hash = UINT64_C(0xfedcba9876543210)};
        golden_format_step(&s, buf, sizeof buf);
        snprintf(want, sizeof want, "7 %016llx %s 0123456789abcdef fedcba9876543210",
                 (unsigned long long)known[i].bits, known[i].text);
        assert_string_equal(buf, want);
    }
    ls_step s0 = {.step = 0, .has_loss = 0, .param_hash = 0x1f2e3d4c5b6a7988, .traj_hash = 0x11223344556677};
    golden_format_step(&s0, buf, sizeof buf);
    assert_string_equal(buf, "0 - - 1f2e3d4c5b6a7988 0011223344556677");
    /* A short buffer is truncated, never overrun. */
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    golden_format_step(&s0, tiny, 5);
    assert_string_equal(tiny, "0 - ");
    assert_int_equal(tiny[5], 'x');
}

/* The example of golden.h, parsed and written back unchanged. */
static const char EXAMPLE[] =
    "# lockstep golden v1\n"
    "# config\n"
    "batch=20\n"
    "model=mlp\n"
    "# steps: step loss_bits loss param_hash traj_hash\n"
    "0 - - 1f2e3d4c5b6a7988 0011223344556677\n"
    "1 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef\n"
    "2 bfe0000000000000 -0.5 0000000000000000 ffffffffffffffff\n";

static void test_parse_example(void **state)
{
    (void)state;
    golden_file g;
    ls_err err = {{0}};
    size_t len = sizeof EXAMPLE - 1;
    assert_int_equal(parse_exact(EXAMPLE, len, &g, &err), LS_OK);
    assert_string_equal(g.config_text, "batch=20\nmodel=mlp\n");
    assert_int_equal(g.n_steps, 3);
    assert_int_equal(g.steps[0].has_loss, 0);
    assert_int_equal(g.steps[0].param_hash, UINT64_C(0x1f2e3d4c5b6a7988));
    assert_int_equal(g.steps[0].traj_hash, UINT64_C(0x0011223344556677));
    assert_int_equal(g.steps[1].has_loss, 1);
    assert_int_equal(g.steps[1].loss_bits, bits_of(1.0));
    assert_int_equal(g.steps[1].param_hash, UINT64_C(0x8899aabbccddeeff));
    assert_int_equal(g.steps[1].traj_hash, UINT64_C(0x0123456789abcdef));
    assert_int_equal(g.steps[2].loss_bits, bits_of(-0.5));
    assert_int_equal(g.steps[2].param_hash, 0);
    assert_int_equal(g.steps[2].traj_hash, UINT64_MAX);
    size_t len2;
    char *text = write_to_string(g.config_text, g.steps, g.n_steps, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(text, EXAMPLE, len);
    free(text);
    golden_free(&g);

    /* Equivalent spellings of the same loss are accepted (strtod gives the
     * same bits), and an empty config and an empty value are fine. */
    static const char ALT[] =
        "# lockstep golden v1\n# config\nname=\n# steps: step loss_bits loss param_hash traj_hash\n"
        "0 - - 0000000000000000 0000000000000000\n"
        "1 3ff0000000000000 1.000 0000000000000000 0000000000000000\n"
        "2 3ff0000000000000 0x1p+0 0000000000000000 0000000000000000\n"
        "3 7ff8000000000000 NAN 0000000000000000 0000000000000000\n";
    assert_int_equal(parse_exact(ALT, sizeof ALT - 1, &g, &err), LS_OK);
    assert_int_equal(g.n_steps, 4);
    assert_string_equal(g.config_text, "name=\n");
    golden_free(&g);
    static const char NOCFG[] =
        "# lockstep golden v1\n# config\n# steps: step loss_bits loss param_hash traj_hash\n"
        "0 - - 0000000000000000 0000000000000000\n";
    assert_int_equal(parse_exact(NOCFG, sizeof NOCFG - 1, &g, &err), LS_OK);
    assert_string_equal(g.config_text, "");
    assert_int_equal(g.n_steps, 1);
    golden_free(&g);
}

/* A file that went through a Windows checkout: every "\n" made "\r\n", or
 * only some of them. It parses to exactly the rows and config of the file
 * with '\n' (golden.h: "\r\n" counts as '\n'). */
static void test_crlf(void **state)
{
    (void)state;
    const size_t len = sizeof EXAMPLE - 1;
    golden_file want, g;
    ls_err err = {{0}};
    assert_int_equal(parse_exact(EXAMPLE, len, &want, &err), LS_OK);
    for (int every = 1; every <= 3; every++) {
        /* every: CRLF on every line (1), every other line (2), every third (3). */
        char *crlf = malloc(2 * len + 1);
        assert_non_null(crlf);
        size_t n = 0;
        int line = 0;
        for (size_t i = 0; i < len; i++) {
            if (EXAMPLE[i] == '\n' && line++ % every == 0)
                crlf[n++] = '\r';
            crlf[n++] = EXAMPLE[i];
        }
        assert_int_equal(parse_exact(crlf, n, &g, &err), LS_OK);
        assert_string_equal(g.config_text, want.config_text);
        assert_int_equal(g.n_steps, want.n_steps);
        assert_memory_equal(g.steps, want.steps, want.n_steps * sizeof *want.steps);
        golden_free(&g);
        free(crlf);
    }
    golden_free(&want);
}

#define HDR "# lockstep golden v1\n# config\nbatch=20\n# steps: step loss_bits loss param_hash traj_hash\n"
#define ROW0 "0 - - 1f2e3d4c5b6a7988 0011223344556677\n"
#define ROW1 "1 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef\n"

static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t line;
        const char *words; /* a piece of the expected message */
    } bad[] = {
        {"", 1, "empty file"},
        {"# lockstep golden v2\n# config\n", 1, "unsupported golden version '2'"},
        {"# lockstep golden v10\n", 1, "unsupported golden version"},
        {"# lockstep golden\n", 1, "not a lockstep golden file"},
        {"\x1f\x8b\x08\x00 binary", 1, "not a lockstep golden file"},
        {"# lockstep golden v1\n# konfig\n", 2, "expected '# config'"},
        {"# lockstep golden v1\n# config\n", 3, "unexpected end of file"},
        {"# lockstep golden v1\n", 2, "unexpected end of file"},
        {"# lockstep golden v1\n# config\nBatch=20\n", 3, "key=value"},
        {"# lockstep golden v1\n# config\n=20\n", 3, "key=value"},
        {"# lockstep golden v1\n# config\nbatch 20\n", 3, "key=value"},
        {"# lockstep golden v1\n# config\nseed=1\nbatch=20\n", 4, "sorted"},
        {"# lockstep golden v1\n# config\nbatch=1\nbatch=2\n", 4, "unique"},
        {"# lockstep golden v1\n# config\n# steps: step loss\n", 3, "key=value"},
        {"# lockstep golden v1\n# config\nbatch=2\r0\n", 3, "byte 0x0d at column 8"},
        {"# lockstep golden v1\n# config\nbatch=20\r\r\n", 3, "byte 0x0d at column 9"},
        {"# lockstep golden v1\r\n# config\r\nbatch=20\r\n", 4, "unexpected end of file"},
        {"\r\n", 1, "not a lockstep golden file"},
        {"# lockstep golden v1\n# config\nbat\0h=20\n", 3, "byte 0x00"},
        {HDR, 5, "no step rows"},
        {HDR "1 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef\n", 5, "expected 0"},
        {HDR ROW0 "2 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef\n", 6, "expected 1"},
        {HDR ROW0 "01 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef\n", 6, "expected 1"},
        {HDR ROW0 "+1 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef\n", 6, "expected 1"},
        {HDR "0 3ff0000000000000 1 1f2e3d4c5b6a7988 0011223344556677\n", 5, "step 0 has no loss"},
        {HDR ROW0 "1 - - 8899aabbccddeeff 0123456789abcdef\n", 6, "loss_bits"},
        {HDR ROW0 "1 3FF0000000000000 1 8899aabbccddeeff 0123456789abcdef\n", 6, "loss_bits"},
        {HDR ROW0 "1 3ff000000000000 1 8899aabbccddeeff 0123456789abcdef\n", 6, "loss_bits"},
        {HDR ROW0 "1 3ff0000000000000 2 8899aabbccddeeff 0123456789abcdef\n", 6, "does not have the bits"},
        {HDR ROW0 "1 3ff0000000000000 nan 8899aabbccddeeff 0123456789abcdef\n", 6, "does not have the bits"},
        {HDR ROW0 "1 7ff8000000000000 1 8899aabbccddeeff 0123456789abcdef\n", 6, "does not have the bits"},
        {HDR ROW0 "1 8000000000000000 0 8899aabbccddeeff 0123456789abcdef\n", 6, "does not have the bits"},
        {HDR ROW0 "1 3ff0000000000000 1x 8899aabbccddeeff 0123456789abcdef\n", 6, "not a number"},
        {HDR ROW0 "1 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdeg\n", 6, "traj_hash"},
        {HDR ROW0 "1 3ff0000000000000 1 8899aabbccddeef 0123456789abcdef\n", 6, "param_hash"},
        {HDR ROW0 "1 3ff0000000000000 1  8899aabbccddeeff 0123456789abcdef\n", 6, "empty field"},
        {HDR ROW0 "1 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef \n", 6, "empty field"},
        {HDR ROW0 " 1 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef\n", 6, "empty field"},
        {HDR ROW0 "1 3ff0000000000000 1 8899aabbccddeeff\n", 6, "4 fields"},
        {HDR ROW0 "1 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef 0\n", 6, "more than 5"},
        {HDR ROW0 "1\t3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef\n", 6, "byte 0x09"},
        {HDR ROW0 "\n", 6, "fields"},
        {HDR ROW0 "# end\n", 6, "fields"},
        {HDR ROW0 ROW1 "2 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef", 7, "missing newline"},
        {HDR ROW0 ROW1 "2 3ff0000000000000 1 8899aabbccddeeff 0123456789abcdef\r", 7, "missing newline"},
        {HDR ROW0 "1 3ff0000000000000 1.0000000000000000000000000000000000000000000000000000000000000000000000"
                  " 8899aabbccddeeff 0123456789abcdef\n", 6, "characters long"},
        {HDR ROW0 "1 3ff0000000000000 \xc3\xa9 8899aabbccddeeff 0123456789abcdef\n", 6, "byte 0xc3"},
    };
    size_t nbad = sizeof bad / sizeof bad[0];
    assert_true(nbad >= 15);
    for (size_t i = 0; i < nbad; i++) {
        /* The texts with an embedded NUL need their true length. */
        size_t len = strlen(bad[i].text);
        if (strstr(bad[i].words, "0x00") != NULL)
            len = sizeof "# lockstep golden v1\n# config\nbat\0h=20\n" - 1;
        golden_file g;
        ls_err err = {{0}};
        ls_status st = parse_exact(bad[i].text, len, &g, &err);
        char want[64];
        snprintf(want, sizeof want, "t.golden: line %zu: ", bad[i].line);
        if (st != LS_EFORMAT || strncmp(err.msg, want, strlen(want)) != 0 || strstr(err.msg, bad[i].words) == NULL)
            fail_msg("case %zu: status %d, message '%s', expected '%s...%s'", i, (int)st, err.msg, want,
                     bad[i].words);
        assert_null(g.steps);
        assert_null(g.mem);
    }
}

/* Every prefix of a valid file parses (exactly when it ends at the end of a
 * row) or is LS_EFORMAT; every single-byte change is OK or LS_EFORMAT. */
static void test_prefixes_and_mutations(void **state)
{
    (void)state;
    sm_state = 7;
    ls_step *steps = random_steps(12);
    size_t len;
    char *text = write_to_string(CONFIG, steps, 12, &len);
    const char *row0 = strstr(text, "\n0 ");
    assert_non_null(row0);
    size_t row0_end = (size_t)(strchr(row0 + 1, '\n') - text) + 1;
    size_t head_lines = 0;
    for (const char *p = text; p <= row0; p++)
        head_lines += *p == '\n';
    for (size_t n = 0; n <= len; n++) {
        golden_file g;
        ls_err err = {{0}};
        ls_status st = parse_exact(text, n, &g, &err);
        int should = n >= row0_end && text[n - 1] == '\n';
        if (should) {
            assert_int_equal(st, LS_OK);
            size_t lines = 0;
            for (size_t i = 0; i < n; i++)
                lines += text[i] == '\n';
            assert_int_equal(g.n_steps, lines - head_lines);
            /* the rows kept are the first ones, unchanged */
            for (size_t i = 0; i < g.n_steps; i++)
                assert_int_equal(g.steps[i].traj_hash, steps[i].traj_hash);
        } else {
            assert_int_equal(st, LS_EFORMAT);
            assert_non_null(strstr(err.msg, "t.golden: line "));
        }
        golden_free(&g);
    }
    static const char subst[] = {0, '\n', ' ', '0', 'a', 'f', 'g', '-', '#', '=', '.', 'e', (char)0xff};
    char *m = malloc(len);
    assert_non_null(m);
    size_t ok = 0, bad = 0;
    for (size_t pos = 0; pos < len; pos++) {
        for (size_t k = 0; k < sizeof subst; k++) {
            memcpy(m, text, len);
            if (m[pos] == subst[k])
                continue;
            m[pos] = subst[k];
            golden_file g;
            ls_err err = {{0}};
            ls_status st = golden_parse(m, len, "t.golden", &g, &err);
            if (st == LS_OK)
                ok++;
            else {
                assert_int_equal(st, LS_EFORMAT);
                bad++;
            }
            golden_free(&g);
        }
    }
    assert_true(bad > 0);
    assert_true(ok > 0); /* e.g. a changed hex digit in a hash */
    free(m);
    free(text);
    free(steps);
}

static void test_write_refuses(void **state)
{
    (void)state;
    sm_state = 9;
    ls_step *steps = random_steps(3);
    FILE *f = fopen("/dev/null", "w");
    assert_non_null(f);
    assert_int_equal(golden_write(f, CONFIG, steps, 3), LS_OK);
    assert_int_equal(golden_write(f, CONFIG, steps, 0), LS_EINVAL);
    assert_int_equal(golden_write(f, "batch=20", steps, 3), LS_EINVAL);       /* no newline */
    assert_int_equal(golden_write(f, "seed=1\nbatch=2\n", steps, 3), LS_EINVAL); /* unsorted */
    assert_int_equal(golden_write(f, "Batch=2\n", steps, 3), LS_EINVAL);
    assert_int_equal(golden_write(f, "a=\t\n", steps, 3), LS_EINVAL);
    steps[2].step = 3;
    assert_int_equal(golden_write(f, CONFIG, steps, 3), LS_EINVAL);
    steps[2].step = 2;
    steps[0].has_loss = 1;
    assert_int_equal(golden_write(f, CONFIG, steps, 3), LS_EINVAL);
    steps[0].has_loss = 0;
    steps[1].has_loss = 0;
    assert_int_equal(golden_write(f, CONFIG, steps, 3), LS_EINVAL);
    fclose(f);
    free(steps);
}

static void test_save_read(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_golden.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], missing[256];
    snprintf(path, sizeof path, "%s/run.golden", dir);
    snprintf(missing, sizeof missing, "%s/none.golden", dir);
    sm_state = 11;
    ls_step *steps = random_steps(40);
    ls_err err = {{0}};
    assert_int_equal(golden_save(path, CONFIG, steps, 40, &err), LS_OK);
    /* overwrite: the rename replaces the file */
    assert_int_equal(golden_save(path, CONFIG, steps, 40, &err), LS_OK);
    golden_file g;
    assert_int_equal(golden_read(path, &g, &err), LS_OK);
    assert_int_equal(g.n_steps, 40);
    assert_string_equal(g.config_text, CONFIG);
    for (size_t i = 0; i < 40; i++)
        assert_int_equal(g.steps[i].loss_bits, steps[i].loss_bits);
    golden_free(&g);

    /* The file holds exactly what golden_write writes. */
    size_t len;
    char *text = write_to_string(CONFIG, steps, 40, &len);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *disk = malloc(len + 1);
    assert_int_equal(fread(disk, 1, len + 1, f), len);
    fclose(f);
    assert_memory_equal(disk, text, len);
    free(disk);
    free(text);

    /* no temporary left behind */
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    assert_int_not_equal(access(tmp, F_OK), 0);

    assert_int_equal(golden_read(missing, &g, &err), LS_EIO);
    assert_non_null(strstr(err.msg, missing));
    assert_non_null(strstr(err.msg, "No such file or directory"));

    /* a parse error names the path */
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("# lockstep golden v1\n# config\nbatch=2\n", f);
    fclose(f);
    assert_int_equal(golden_read(path, &g, &err), LS_EFORMAT);
    char want[300];
    snprintf(want, sizeof want, "%s: line 4: ", path);
    assert_non_null(strstr(err.msg, want));

    /* invalid rows are refused before anything is written */
    steps[1].step = 5;
    assert_int_equal(golden_save(path, CONFIG, steps, 40, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, path));
    /* an unwritable directory is LS_EIO naming the file */
    snprintf(tmp, sizeof tmp, "%s/no/such/dir.golden", dir);
    steps[1].step = 1;
    assert_int_equal(golden_save(tmp, CONFIG, steps, 40, &err), LS_EIO);
    assert_non_null(strstr(err.msg, "no/such/dir.golden"));

    /* Not a regular file: refused at once, naming it (a FIFO without a
     * writer would block a plain open forever). */
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s/fifo.golden", dir);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    assert_int_equal(golden_read(fifo, &g, &err), LS_EIO);
    assert_non_null(strstr(err.msg, fifo));
    assert_non_null(strstr(err.msg, "FIFO"));
    unlink(fifo);
    assert_int_equal(golden_read(dir, &g, &err), LS_EIO);
    assert_non_null(strstr(err.msg, "directory"));
    assert_int_equal(golden_read("/dev/null", &g, &err), LS_EIO);
    assert_non_null(strstr(err.msg, "device"));

    unlink(path);
    rmdir(dir);
    free(steps);
}

/* The optional sources section: written after the config, read back
 * apart from it (config_text unchanged), absent when empty; a source line
 * that is not key=value is refused naming its line. */
static void test_sources(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_golden.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/src.golden", dir);
    sm_state = 5;
    ls_step *steps = random_steps(3);
    ls_err err = {{0}};
    const char *src = "file=/usr/share/games/fortunes/cookie\nval_file=v.txt\n";
    assert_int_equal(golden_save_sources(path, CONFIG, src, steps, 3, &err), LS_OK);
    golden_file g;
    assert_int_equal(golden_read(path, &g, &err), LS_OK);
    assert_string_equal(g.config_text, CONFIG);
    assert_string_equal(g.source_text, src);
    assert_int_equal(g.n_steps, 3);
    golden_free(&g);
    /* Without sources: no section, "" read back. */
    assert_int_equal(golden_save_sources(path, CONFIG, "", steps, 3, &err), LS_OK);
    assert_int_equal(golden_read(path, &g, &err), LS_OK);
    assert_string_equal(g.source_text, "");
    golden_free(&g);
    /* A bad source line. */
    static const char bad[] = "# lockstep golden v1\n# config\nbatch=20\n# sources\nno equals sign\n"
                              "# steps: step loss_bits loss param_hash traj_hash\n"
                              "0 - - 0000000000000000 0000000000000000\n";
    assert_int_equal(parse_exact(bad, sizeof bad - 1, &g, &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, "line 5"));
    assert_int_equal(golden_save_sources(path, CONFIG, "x\n", steps, 3, &err), LS_EINVAL);
    free(steps);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_format_known),
        cmocka_unit_test(test_parse_example),
        cmocka_unit_test(test_crlf),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_prefixes_and_mutations),
        cmocka_unit_test(test_write_refuses),
        cmocka_unit_test(test_save_read),
        cmocka_unit_test(test_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
