/* nn_oracle.c — the C half of the layers' oracle (tests/test_nn_oracle.sh):
 * for every layer of engine/nn/ and a few shapes, forward and backward on
 * inputs drawn from the engine's addressed RNG, everything written as .npy
 * into DIR, with DIR/manifest.txt naming each case's layer, settings and
 * tensors. tests/nn_oracle.py recomputes every output and gradient with
 * PyTorch autograd in float64 and compares.
 * Whole declared networks too (engine/models/seq/): DIR/models.txt names
 * each case's text, input shape, classes and tensors; the files hold the
 * samples, labels, parameters (seq_init), the summed loss and the leaf's
 * gradient seq_leaf wrote, which the script recomputes through the same
 * network built from torch layers; for a network with dropout also the
 * keep masks seq_leaf drew (nn_act_dropout_keep at its address), which the
 * script applies times 1/(1-p).
 * Usage: nn_oracle DIR    (exit 0 when every file was written, 1 otherwise) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/data/npy.h"
#include "engine/models/seq/seq.h"
#include "engine/nn/nn.h"
#include "engine/nn/nn_act.h"
#include "engine/nn/nn_attn.h"
#include "engine/nn/nn_conv.h"
#include "engine/nn/nn_dense.h"
#include "engine/nn/nn_embed.h"
#include "engine/nn/nn_loss.h"
#include "engine/nn/nn_norm.h"
#include "engine/num/rng.h"

static const char *dir;
static FILE *manifest;
static int bad;
static uint64_t case_no;

static void put(const char *name, const char *what, const char *descr, const void *data, size_t elem,
                size_t count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s.npy", dir, name, what);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        fprintf(stderr, "nn_oracle: cannot write %s\n", path);
        bad = 1;
        return;
    }
    size_t shape[1] = {count};
    npy_write_header(f, descr, shape, 1);
    if (count > 0 && fwrite(data, elem, count, f) != count)
        bad = 1;
    if (fclose(f) != 0)
        bad = 1;
}

static void putf(const char *name, const char *what, const float *x, size_t n)
{
    put(name, what, "<f4", x, sizeof(float), n);
}

/* Values in [-scale, scale) from the engine's RNG, addressed by case and tensor. */
static float *rnd(size_t n, uint64_t tensor, float scale)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++)
        p[i] = (2.0f * rng_uniformf(2026, RNG_TEST, case_no, tensor, i) - 1.0f) * scale;
    return p;
}

static void *scratch_for(const nn_layer *l, size_t n)
{
    size_t bytes = nn_scratch_bytes(l, n);
    return aligned_alloc(64, nn_round64(bytes ? bytes : 64));
}

/* The manifest line: name kind n in0 in1 in2 units vocab k same bias heads
 * eps p L tensors (name:off:d0:d1 comma-separated, "-" when none). L is the
 * longest chain of roundings an output element has (the oracle's bound). */
static void line(const char *name, const nn_layer *l, size_t n, size_t L)
{
    fprintf(manifest, "%s %d %zu %zu %zu %zu %zu %zu %zu %d %d %zu %.17g %.9g %zu ", name, (int)l->kind, n,
            l->in[0], l->in[1], l->in[2], l->units, l->vocab, l->k, l->same, l->bias, l->heads, l->eps,
            (double)l->p, L);
    if (l->n_tensors == 0)
        fputs("-", manifest);
    for (size_t i = 0; i < l->n_tensors; i++)
        fprintf(manifest, "%s%s:%zu:%zu:%zu", i ? "," : "", l->tensor[i].name, l->tensor[i].off,
                l->tensor[i].shape[0], l->tensor[i].ndim == 2 ? l->tensor[i].shape[1] : 0);
    fputc('\n', manifest);
}

static int describe(nn_layer *l, const char *name)
{
    ls_err err;
    if (nn_describe(l, &err) != LS_OK) {
        fprintf(stderr, "nn_oracle: %s: %s\n", name, err.msg);
        bad = 1;
        return 0;
    }
    return 1;
}

/* The layers with the uniform signature (nn.h). */
static void run_uniform(const char *name, nn_layer l, size_t n, size_t L)
{
    case_no++;
    if (!describe(&l, name))
        return;
    float *x = rnd(n * l.in_size, 0, 1.0f), *w = rnd(l.n_params, 1, 0.5f), *dy = rnd(n * l.out_size, 2, 1.0f);
    float *y = calloc(n * l.out_size, sizeof(float)), *dx = calloc(n * l.in_size, sizeof(float));
    float *dw = calloc(l.n_params + 1, sizeof(float));
    float *act = aligned_alloc(64, nn_round64((n * l.act_floats + 1) * sizeof(float)));
    void *scratch = scratch_for(&l, n);
    if (l.kind == NN_LAYERNORM)   /* gains near 1, as trained networks start */
        for (size_t i = 0; i < l.in[2]; i++)
            w[i] += 1.0f;
    switch (l.kind) {
    case NN_DENSE:
        nn_dense_forward(&l, y, act, x, w, n, scratch);
        nn_dense_backward(&l, dx, dw, dy, act, x, y, w, n, scratch);
        break;
    case NN_CONV2D:
        nn_conv_forward(&l, y, act, x, w, n, scratch);
        nn_conv_backward(&l, dx, dw, dy, act, x, y, w, n, scratch);
        break;
    case NN_MAXPOOL:
    case NN_AVGPOOL:
        nn_conv_pool_forward(&l, y, act, x, w, n, scratch);
        nn_conv_pool_backward(&l, dx, dw, dy, act, x, y, w, n, scratch);
        break;
    case NN_LAYERNORM:
        nn_norm_forward(&l, y, act, x, w, n, scratch);
        nn_norm_backward(&l, dx, dw, dy, act, x, y, w, n, scratch);
        break;
    case NN_ATTN:
        nn_attn_forward(&l, y, act, x, w, n, scratch);
        nn_attn_backward(&l, dx, dw, dy, act, x, y, w, n, scratch);
        break;
    case NN_POSEMBED:
        nn_embed_pos_forward(&l, y, x, w, n);
        nn_embed_pos_backward(&l, dx, dw, dy, n);
        break;
    case NN_RELU:
        nn_act_relu_forward(&l, y, x, n);
        nn_act_relu_backward(&l, dx, dy, x, n);
        break;
    case NN_GELU:
        for (size_t i = 0; i < n * l.in_size; i++)
            x[i] *= 4.0f;   /* reach the tails of tanh */
        nn_act_gelu_forward(&l, y, act, x, n);
        nn_act_gelu_backward(&l, dx, dy, act, x, n);
        break;
    default:
        bad = 1;
        break;
    }
    line(name, &l, n, L);
    putf(name, "x", x, n * l.in_size);
    putf(name, "w", w, l.n_params);
    putf(name, "dy", dy, n * l.out_size);
    putf(name, "y", y, n * l.out_size);
    putf(name, "dx", dx, n * l.in_size);
    putf(name, "dw", dw, l.n_params);
    free(x), free(w), free(dy), free(y), free(dx), free(dw), free(act), free(scratch);
}

static void run_add(const char *name, size_t n, size_t m)
{
    case_no++;
    nn_layer l = {.kind = NN_ADD, .in = {m, 1, 1}};
    if (!describe(&l, name))
        return;
    float *x = rnd(n * m, 0, 1.0f), *x2 = rnd(n * m, 1, 1.0f), *dy = rnd(n * m, 2, 1.0f);
    float *y = calloc(n * m, sizeof(float)), *dx = calloc(n * m, sizeof(float)), *dx2 = calloc(n * m, sizeof(float));
    nn_act_add_forward(&l, y, x, x2, n);
    nn_act_add_backward(&l, dx, dx2, dy, n);
    line(name, &l, n, 1);
    putf(name, "x", x, n * m), putf(name, "x2", x2, n * m), putf(name, "dy", dy, n * m);
    putf(name, "y", y, n * m), putf(name, "dx", dx, n * m), putf(name, "dx2", dx2, n * m);
    free(x), free(x2), free(dy), free(y), free(dx), free(dx2);
}

static void run_dropout(const char *name, size_t n, size_t m, float p)
{
    case_no++;
    nn_layer l = {.kind = NN_DROPOUT, .in = {m, 1, 1}, .p = p};
    if (!describe(&l, name))
        return;
    const uint64_t seed = 77, step = 5, sample0 = 1000;
    float *x = rnd(n * m, 0, 1.0f), *dy = rnd(n * m, 2, 1.0f), *keep = calloc(n * m, sizeof(float));
    float *y = calloc(n * m, sizeof(float)), *dx = calloc(n * m, sizeof(float));
    nn_act_dropout_forward(&l, y, x, n, seed, step, sample0);
    nn_act_dropout_backward(&l, dx, dy, n, seed, step, sample0);
    for (size_t b = 0; b < n; b++)
        for (size_t i = 0; i < m; i++)
            keep[b * m + i] = (float)nn_act_dropout_keep(p, seed, step, sample0 + b, i);
    line(name, &l, n, 1);
    putf(name, "x", x, n * m), putf(name, "dy", dy, n * m), putf(name, "mask", keep, n * m);
    putf(name, "y", y, n * m), putf(name, "dx", dx, n * m);
    free(x), free(dy), free(keep), free(y), free(dx);
}

static int32_t *ids_for(size_t count, size_t bound)
{
    int32_t *ids = malloc((count ? count : 1) * sizeof(int32_t));
    for (size_t i = 0; i < count; i++)
        ids[i] = (int32_t)rng_below(2026, RNG_TEST, case_no, 9, i, bound);
    return ids;
}

static void run_embed(const char *name, size_t n, size_t T, size_t V, size_t C)
{
    case_no++;
    nn_layer l = {.kind = NN_EMBED, .in = {T, 1, 1}, .vocab = V, .units = C};
    if (!describe(&l, name))
        return;
    int32_t *ids = ids_for(n * T, V);
    float *w = rnd(l.n_params, 1, 0.5f), *dy = rnd(n * l.out_size, 2, 1.0f);
    float *y = calloc(n * l.out_size, sizeof(float)), *dw = calloc(l.n_params, sizeof(float));
    nn_embed_forward(&l, y, ids, w, n);
    nn_embed_backward(&l, dw, dy, ids, n);
    line(name, &l, n, n * T);
    put(name, "ids", "<i4", ids, sizeof(int32_t), n * T);
    putf(name, "w", w, l.n_params), putf(name, "dy", dy, n * l.out_size);
    putf(name, "y", y, n * l.out_size), putf(name, "dw", dw, l.n_params);
    free(ids), free(w), free(dy), free(y), free(dw);
}

static void run_xent(const char *name, size_t n, size_t T, size_t C, float spread)
{
    case_no++;
    nn_layer l = {.kind = NN_XENT, .in = {T, 1, C}};
    if (!describe(&l, name))
        return;
    int32_t *labels = ids_for(n * T, C);
    float *z = rnd(n * l.in_size, 0, spread), *dz = calloc(n * l.in_size, sizeof(float));
    void *scratch = scratch_for(&l, n);
    double loss = nn_loss_xent_forward(&l, z, labels, n, scratch);
    nn_loss_xent_backward(&l, dz, z, labels, n, scratch);
    line(name, &l, n, n * T + C);
    put(name, "ids", "<i4", labels, sizeof(int32_t), n * T);
    putf(name, "x", z, n * l.in_size);
    put(name, "y", "<f8", &loss, sizeof(double), 1);
    putf(name, "dx", dz, n * l.in_size);
    free(labels), free(z), free(dz), free(scratch);
}

static FILE *models;

/* A declared network on n samples of H x W x C (a leaf: the gradient of the
 * summed loss). The line: name n H W C classes L text tensors (as the
 * manifest's). L: the bound's chain length (nn_oracle.py). */
static void run_model(const char *name, const char *text, size_t H, size_t W, size_t C, size_t classes, size_t n,
                      size_t L)
{
    case_no++;
    seq_decl d;
    seq *s = NULL;
    ls_err err = { "" };
    const size_t in[3] = { H, W, C };
    if (seq_parse(text, &d, &err) != LS_OK || seq_create(&s, &d, in, classes, n, &err) != LS_OK) {
        fprintf(stderr, "nn_oracle: %s: %s\n", name, err.msg);
        bad = 1;
        return;
    }
    const size_t np = seq_n_params(s), dim = H * W * C;
    float *w = malloc(np * sizeof(float)), *dw = malloc(np * sizeof(float));
    seq_init(s, w, 7);
    /* Biases and norms start at 0 and 1: move them so their gradients
     * travel through every term. */
    float *jig = rnd(np, 3, 0.05f);
    for (size_t i = 0; i < np; i++)
        w[i] = w[i] + jig[i];
    float *x = rnd(n * dim, 1, 1.0f);
    if (d.layer[0].kind == NN_EMBED) {
        /* A token network reads byte ids as the text task gives them, v/255. */
        int32_t *tok = ids_for(n * dim, classes);
        for (size_t i = 0; i < n * dim; i++)
            x[i] = (float)tok[i] / 255.0f;
        free(tok);
    }
    int32_t *lab = malloc(n * sizeof(int32_t));
    for (size_t i = 0; i < n; i++)
        lab[i] = (int32_t)(rng_uniformf(2026, RNG_TEST, case_no, 2, i) * (float)classes) % (int32_t)classes;
    void *scratch = aligned_alloc(64, nn_round64(seq_scratch_bytes(s)));
    /* A training leaf's address (seq.h): seed, step and the stream
     * position of the first sample, as the model descriptor passes them. */
    const uint64_t seed = 7, step = 3, sample0 = 2 * 64 + 16;
    const double loss = seq_leaf(s, w, x, lab, n, seed, step, sample0, dw, scratch);
    /* Every dropout layer's keep mask, [n][its input] each, in layer order. */
    size_t n_mask = 0;
    for (size_t i = 0; i < seq_n_layers(s); i++)
        if (seq_layer(s, i)->kind == NN_DROPOUT)
            n_mask += n * seq_layer(s, i)->in_size;
    float *mask = malloc((n_mask ? n_mask : 1) * sizeof(float));
    size_t at = 0;
    for (size_t i = 0; i < seq_n_layers(s); i++) {
        const nn_layer *l = seq_layer(s, i);
        if (l->kind != NN_DROPOUT)
            continue;
        for (size_t b = 0; b < n; b++)
            for (size_t e = 0; e < l->in_size; e++)
                mask[at++] = (float)nn_act_dropout_keep(l->p, seed, step, sample0 + b, e);
    }
    fprintf(models, "%s %zu %zu %zu %zu %zu %zu %s ", name, n, H, W, C, classes, L, text);
    for (size_t t = 0; t < seq_n_tensors(s); t++) {
        const char *tn;
        size_t off, ndim, shape[2];
        int nd;
        seq_tensor(s, t, &tn, &off, &ndim, shape, &nd);
        fprintf(models, "%s%s:%zu:%zu:%zu", t ? "," : "", tn, off, shape[0], ndim > 1 ? shape[1] : 0);
    }
    fputc('\n', models);
    putf(name, "x", x, n * dim);
    put(name, "ids", "<i4", lab, sizeof(int32_t), n);
    putf(name, "w", w, np);
    putf(name, "dw", dw, np);
    put(name, "y", "<f8", &loss, sizeof loss, 1);
    if (n_mask > 0)
        putf(name, "mask", mask, n_mask);
    free(mask);
    free(scratch);
    free(lab);
    free(x);
    free(jig);
    free(dw);
    free(w);
    seq_destroy(s);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: nn_oracle DIR\n");
        return 2;
    }
    dir = argv[1];
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.txt", dir);
    manifest = fopen(path, "w");
    if (manifest == NULL) {
        fprintf(stderr, "nn_oracle: cannot write %s\n", path);
        return 1;
    }
    /* L: the longest sum an output element is (the oracle's bound, nn_oracle.py). */
    run_uniform("dense_flat", (nn_layer){.kind = NN_DENSE, .in = {1, 1, 5}, .units = 4, .bias = 1}, 3, 5);
    run_uniform("dense_seq_nobias", (nn_layer){.kind = NN_DENSE, .in = {3, 1, 17}, .units = 9}, 2, 17);
    run_uniform("dense_wide", (nn_layer){.kind = NN_DENSE, .in = {1, 1, 64}, .units = 33, .bias = 1}, 16, 64);
    run_uniform("conv3_same", (nn_layer){.kind = NN_CONV2D, .in = {6, 5, 3}, .units = 4, .k = 3, .same = 1, .bias = 1}, 2, 60);
    run_uniform("conv3_valid", (nn_layer){.kind = NN_CONV2D, .in = {7, 7, 2}, .units = 3, .k = 3, .bias = 1}, 2, 50);
    run_uniform("conv5_same_nobias", (nn_layer){.kind = NN_CONV2D, .in = {5, 6, 1}, .units = 2, .k = 5, .same = 1}, 3, 90);
    run_uniform("conv1", (nn_layer){.kind = NN_CONV2D, .in = {4, 4, 8}, .units = 5, .k = 1, .bias = 1}, 2, 32);
    run_uniform("maxpool2", (nn_layer){.kind = NN_MAXPOOL, .in = {6, 5, 3}, .k = 2}, 2, 1);
    run_uniform("avgpool2", (nn_layer){.kind = NN_AVGPOOL, .in = {5, 6, 3}, .k = 2}, 2, 4);
    run_uniform("avgpool3", (nn_layer){.kind = NN_AVGPOOL, .in = {6, 7, 2}, .k = 3}, 2, 9);
    run_uniform("layernorm8", (nn_layer){.kind = NN_LAYERNORM, .in = {3, 1, 8}, .eps = 1e-5}, 2, 8);
    run_uniform("layernorm300", (nn_layer){.kind = NN_LAYERNORM, .in = {1, 1, 300}, .eps = 1e-5}, 3, 300);
    run_uniform("layernorm_image", (nn_layer){.kind = NN_LAYERNORM, .in = {2, 3, 4}, .eps = 1e-3}, 2, 12);
    run_uniform("posembed", (nn_layer){.kind = NN_POSEMBED, .in = {4, 1, 5}}, 3, 3);
    run_uniform("attn_h2", (nn_layer){.kind = NN_ATTN, .in = {5, 1, 8}, .heads = 2}, 2, 40);
    run_uniform("attn_h3", (nn_layer){.kind = NN_ATTN, .in = {7, 1, 12}, .heads = 3}, 1, 60);
    run_uniform("attn_t1", (nn_layer){.kind = NN_ATTN, .in = {1, 1, 4}, .heads = 1}, 2, 12);
    run_uniform("relu", (nn_layer){.kind = NN_RELU, .in = {10, 1, 5}}, 2, 1);
    run_uniform("gelu", (nn_layer){.kind = NN_GELU, .in = {10, 1, 5}}, 2, 8);
    run_add("add", 2, 7);
    run_dropout("dropout", 3, 40, 0.3f);
    run_embed("embed", 2, 5, 11, 6);
    run_embed("embed_repeats", 3, 8, 3, 4);
    run_xent("xent10", 4, 1, 10, 3.0f);
    run_xent("xent_seq1000", 2, 3, 1000, 5.0f);
    run_xent("xent1", 3, 1, 1, 1.0f);
    if (fclose(manifest) != 0)
        bad = 1;
    snprintf(path, sizeof path, "%s/models.txt", dir);
    models = fopen(path, "w");
    if (models == NULL) {
        fprintf(stderr, "nn_oracle: cannot write %s\n", path);
        return 1;
    }
    /* L: a chain length of the bound (nn_oracle.py). The errors of a whole
     * network measured with L = 1 were at most 35 (cnn), 6 and 1 ulps of
     * the largest gradient (the residual and token networks below: 8, 9
     * and 15, gpt's); a wrong formula is ~2^24. */
    run_model("model_mlp", "dense:16,relu,dense:12,relu,dense:3", 1, 1, 12, 3, 5, 20);
    run_model("model_cnn", "conv3x3:32,relu,maxpool2,conv3x3:64,relu,maxpool2,dense:128,relu,dense:10", 28, 28, 1, 10,
              4, 100);
    run_model("model_every_layer", "conv3x3:4,gelu,avgpool2,layernorm,conv5x5:3,relu,maxpool2,dense:7,gelu,dense:5", 8,
              8, 2, 5, 6, 40);
    /* Residual branches and token networks (seq.h): a flat residual, a
     * tiny decoder of two blocks, and the gpt model's own declaration on
     * windows of its 64 bytes. */
    run_model("model_res_flat", "dense:6,res(dense:6,relu),2x[res(layernorm,dense:6)],dense:3", 1, 1, 4, 3, 5, 40);
    run_model("model_tiny_gpt", "embed:8,posembed,2x[res(layernorm,attn:2),res(layernorm,dense:16,gelu,dense:8)],"
              "layernorm,dense:11", 1, 1, 5, 11, 3, 40);
    run_model("model_gpt", "embed:64,posembed,2x[res(layernorm,attn:4),res(layernorm,dense:256,gelu,dense:64)],"
              "layernorm,dense:256", 1, 1, 64, 256, 2, 100);
    /* Dropout (the keep masks seq_leaf drew go with each case): on the
     * input, after a dense and an image layer, first in a residual branch
     * (its gradient joins the skip's) and inside one, and in a token
     * network after the embedding and in both kinds of block. */
    run_model("model_dropout_flat", "dropout:0.1,dense:16,relu,dropout:0.25,dense:12,res(dropout:0.5,dense:12),"
              "res(dense:12,relu,dropout:0.3),dense:3", 1, 1, 12, 3, 5, 40);
    run_model("model_dropout_image", "conv3x3:4,relu,dropout:0.5,maxpool2,conv3x3:3,dropout:0.2,dense:7,relu,dense:5",
              8, 8, 2, 5, 6, 60);
    run_model("model_dropout_gpt", "embed:8,dropout:0.1,posembed,2x[res(layernorm,attn:2,dropout:0.2),"
              "res(layernorm,dense:16,gelu,dropout:0.3,dense:8)],layernorm,dense:11", 1, 1, 5, 11, 3, 40);
    if (fclose(models) != 0)
        bad = 1;
    return bad;
}
