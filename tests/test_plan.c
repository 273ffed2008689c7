/* test_plan.c — the plan of a run's steps (engine/core/plan.h): for each
 * built-in model, the plan chosen with and without the model's hints
 * (LOCKSTEP_HINTS=off) at threads 1, 2, 3 and 8, and that executing each of
 * them gives the same bits: every step's trajectory hash of the eight runs
 * compared with memcmp, and the last one with the hash `lockstep golden
 * update` wrote with the default plan (the golden files' for four models;
 * for linear and seq, which have none, the hash of the same config from `lockstep
 * train`). Also: a config's
 * reduce=unordered is its own plan, and the text of a plan names what it
 * chose. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/plan.h"
#include "engine/core/session.h"
#include "engine/core/train.h"

static const int THREADS[] = { 1, 2, 3, 8 };
#define N_THREADS (sizeof THREADS / sizeof THREADS[0])
#define MAX_STEPS 40

/* A config of each built-in model and what its plan must be with hints. */
typedef struct {
    const char *model;
    const char *text;          /* canonical config text (key=value lines) */
    int steps;
    uint64_t traj;             /* the trajectory after `steps` steps (golden file, or the CLI) */
    plan_reduce reduce;        /* with hints; at 8 threads for logic-ca (HELD needs 16 finish units a thread) */
    int waves;                 /* with hints */
    int engine_adds;           /* with hints; without, the engine adds for every model */
    const char *file;          /* the text task's --file (a source: no part of the config text), or NULL */
} plan_case;

static const plan_case CASES[] = {
    /* golden/teacher-sgd.golden */
    { "mlp",
      "batch=32\nclip=0x0p+0\ndata_hash=818655585069954587\nformat=2\nhidden=32\nlr=0x1.99999ap-5\n"
      "model=mlp\nmomentum=0x1.ccccccp-1\noptimizer=sgd\nreduce=tree\nseed=1\ntask=teacher\nweight_decay=0x0p+0\n",
      30, 0xa1ad85f487191d53ULL, PLAN_TREE_TOP, 0, 0, NULL },
    /* golden/logic-teacher.golden */
    { "logic",
      "batch=32\nbeta1=0x1.ccccccp-1\nbeta2=0x1.ff7ceep-1\nbits=3\nclip=0x0p+0\ndata_hash=818655585069954587\n"
      "eps=0x1.5798eep-27\nformat=2\nlayers=256x4\nlr=0x1.47ae14p-7\nmodel=logic\noptimizer=adamw\n"
      "reduce=tree\nresidual=0x0p+0\nseed=1\ntask=teacher\ntau=0x1.4p+3\nweight_decay=0x0p+0\nwiring=random\n",
      12, 0x33d0a790c4402312ULL, PLAN_TREE_TOP, 0, 0, NULL },
    /* golden/checkerboard-short.golden */
    { "logic-ca",
      "async=0\nbatch=2\nbeta1=0x1.ccccccp-1\nbeta2=0x1.fae148p-1\nca_steps=20\nchannels=8\nclip=0x1.9p+6\n"
      "data_hash=0\neps=0x1.5798eep-27\nformat=2\ngrid=16\nkernels=16\nlayers=256x10,128,64,32,16,8x2\n"
      "lr=0x1.99999ap-5\nmodel=logic-ca\noptimizer=adamw\nparts=8\nperception=8,4,2\nperiodic=0\nreduce=tree\n"
      "residual=0x1.4p+3\nseed=23\ntask=checkerboard\nweight_decay=0x1.47ae14p-7\n",
      4, 0xdafb1aed556f84b7ULL, PLAN_HELD, 1, 0, NULL },
    /* golden/karate-short.golden */
    { "gnn",
      "batch=17\nbeta1=0x1.ccccccp-1\nbeta2=0x1.ff7ceep-1\nclip=0x0p+0\ndata_hash=2019706224063124102\n"
      "eps=0x1.5798eep-27\nformat=2\ngin_eps=0x0p+0\nhidden=16\nlayers=2\nlr=0x1.47ae14p-7\nmodel=gnn\n"
      "optimizer=adamw\nreduce=tree\nseed=1\ntask=karate\nweight_decay=0x0p+0\n",
      20, 0x32c26460b2d4fcfeULL, PLAN_TREE_TOP, 0, 1, NULL },
    /* `lockstep train --task teacher --model linear --steps 30 --batch 37`, measured by the CLI at the atoms change */
    { "linear", NULL, 30, 0x86c2d8814df32eaeULL, PLAN_TREE_TOP, 0, 1, NULL },
    /* `lockstep train --task teacher --model seq --layers dense:32,gelu,layernorm,dense:4 --batch 37 --steps 12`,
     * measured by the CLI when seq was added (after the atoms change) */
    { "seq",
      "batch=37\nbeta1=0x1.ccccccp-1\nbeta2=0x1.ff7ceep-1\nclip=0x0p+0\ndata_hash=818655585069954587\n"
      "eps=0x1.5798eep-27\nformat=2\nimage=0\nlayers=dense:32,gelu,layernorm,dense:4\nlr=0x1.47ae14p-7\nmodel=seq\n"
      "optimizer=adamw\nreduce=tree\nseed=1\ntask=teacher\nweight_decay=0x0p+0\n",
      12, 0xfb518d893bbf0ae7ULL, PLAN_TREE_TOP, 0, 1, NULL },
    /* golden/cnn-short.golden */
    { "cnn",
      "batch=64\nbeta1=0x1.ccccccp-1\nbeta2=0x1.ff7ceep-1\nclip=0x0p+0\ndata_hash=1556405685210825483\n"
      "decay_steps=4690\neps=0x1.5798eep-27\nformat=2\nimage=28,28,1\n"
      "layers=conv3x3:32,relu,maxpool2,conv3x3:64,relu,maxpool2,dense:128,relu,dense:10\nlr=0x1.89374cp-10\n"
      "lr_min=0x0p+0\nlr_schedule=cosine\nmodel=cnn\noptimizer=adamw\nreduce=tree\nseed=1\ntask=fashion-mnist\n"
      "warmup=0\nweight_decay=0x0p+0\n",
      4, 0xd90de169378663a4ULL, PLAN_TREE_TOP, 0, 1, NULL },
    /* `lockstep train --task text --file /usr/share/games/fortunes/cookie --context 16 --batch 37 --steps 4`
     * (gpt, the text task's default), measured by the CLI when gpt was added */
    { "gpt",
      "batch=37\nbeta1=0x1.ccccccp-1\nbeta2=0x1.ff7ceep-1\nclip=0x0p+0\ncontext=16\ndata_hash=6451211184462227437\n"
      "decay_steps=500\neps=0x1.5798eep-27\nformat=2\nimage=0\n"
      "layers=embed:64,posembed,2x[res(layernorm,attn:4),res(layernorm,dense:256,gelu,dense:64)],layernorm,dense:256\n"
      "lr=0x1.89374cp-9\nlr_min=0x1.3a92a4p-12\nlr_schedule=cosine\nmodel=gpt\noptimizer=adamw\nreduce=tree\nseed=1\n"
      "task=text\nval_stride=64\nwarmup=50\nweight_decay=0x0p+0\n",
      4, 0x4d98c7dc6d0b150eULL, PLAN_TREE_TOP, 0, 1, "/usr/share/games/fortunes/cookie" },
};
#define N_CASES (sizeof CASES / sizeof CASES[0])

static ls_config *case_config(const plan_case *c)
{
    ls_config *cfg = NULL;
    ls_err err = { "" };
    if (c->text != NULL) {
        if (ls_config_parse(&cfg, c->text, &err) != LS_OK)
            fail_msg("%s: %s", c->model, err.msg);
        if (c->file != NULL && ls_config_set(cfg, "file", c->file, &err) != LS_OK)
            fail_msg("%s --file %s: %s", c->model, c->file, err.msg);
        return cfg;
    }
    if (ls_config_create(&cfg, "teacher", "linear", &err) != LS_OK || ls_config_set(cfg, "batch", "37", &err) != LS_OK ||
        ls_config_set(cfg, "leaf", "32", &err) != LS_OK)
        fail_msg("%s: %s", c->model, err.msg);
    return cfg;
}

static void set_hints(int on)
{
    if (on)
        unsetenv("LOCKSTEP_HINTS");
    else
        setenv("LOCKSTEP_HINTS", "off", 1);
}

/* `steps` steps of cfg at `threads` threads: every step's trajectory hash
 * into traj[0 .. steps], and the plan the trainer chose. */
static void run_case(const ls_config *cfg, int threads, int steps, uint64_t *traj, plan *chosen)
{
    ls_session_opts o = { .size = sizeof(ls_session_opts) };
    o.threads = threads;
    o.steps = steps;
    ls_session *s = NULL;
    ls_err err = { "" };
    if (ls_session_open(&s, cfg, &o, &err) != LS_OK)
        fail_msg("open: %s", err.msg);
    *chosen = *trainer_plan(session_trainer(s));
    ls_session_state st;
    ls_session_state_get(s, &st);
    traj[0] = st.traj_hash;
    for (int i = 1; i <= steps; i++) {
        if (ls_session_step(s, NULL, &err) != LS_OK)
            fail_msg("step %d: %s", i, err.msg);
        ls_session_state_get(s, &st);
        traj[i] = st.traj_hash;
    }
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
}

static void check_case(const plan_case *c)
{
    ls_config *cfg = case_config(c);
    uint64_t first[MAX_STEPS + 1], traj[MAX_STEPS + 1];
    assert_true(c->steps <= MAX_STEPS);
    int have_first = 0;
    for (int hints = 1; hints >= 0; hints--) {
        set_hints(hints);
        for (size_t k = 0; k < N_THREADS; k++) {
            plan p;
            run_case(cfg, THREADS[k], c->steps, traj, &p);
            char text[2048];
            plan_describe(&p, c->model, text, sizeof text);
            /* The plan chosen. */
            assert_int_equal(p.threads, THREADS[k]);
            if (!hints) {
                assert_int_equal(p.reduce, PLAN_TREE);
                assert_int_equal(p.waves, 0);
                assert_int_equal(p.finish_folded, 0);
                assert_int_equal(p.engine_adds, 1);
            } else {
                plan_reduce want = c->reduce;
                if (want == PLAN_HELD && p.finish_units < PLAN_FINISH_CHUNK * (size_t)THREADS[k])
                    want = PLAN_TREE_TOP;
                if (p.reduce != want)
                    fail_msg("%s at %d threads: plan %s, expected %s\n%s", c->model, THREADS[k],
                             plan_reduce_name(p.reduce), plan_reduce_name(want), text);
                assert_int_equal(p.waves, c->waves);
                assert_int_equal(p.engine_adds, c->engine_adds);
            }
            assert_int_equal(p.param_bufs, THREADS[k] > 1 ? PLAN_PARAM_BUFS : 1);
            assert_non_null(strstr(text, plan_reduce_name(p.reduce)));
            /* Its bits: those of the first run, step by step, and of before. */
            if (!have_first) {
                memcpy(first, traj, sizeof traj[0] * (size_t)(c->steps + 1));
                have_first = 1;
                if (memcmp(&traj[c->steps], &c->traj, sizeof c->traj) != 0)
                    fail_msg("%s: trajectory %016llx after %d steps, expected %016llx", c->model,
                             (unsigned long long)traj[c->steps], c->steps, (unsigned long long)c->traj);
            }
            if (memcmp(first, traj, sizeof traj[0] * (size_t)(c->steps + 1)) != 0)
                fail_msg("%s: hints %s, %d threads: the trajectory differs from hints on, 1 thread", c->model,
                         hints ? "on" : "off", THREADS[k]);
        }
    }
    set_hints(1);
    printf("%s: %d steps identical at threads 1,2,3,8 with and without hints, trajectory %016llx\n", c->model,
           c->steps, (unsigned long long)first[c->steps]);
    ls_config_destroy(cfg);
}

static void test_mlp(void **state) { (void)state; check_case(&CASES[0]); }
static void test_logic(void **state) { (void)state; check_case(&CASES[1]); }
static void test_logic_ca(void **state) { (void)state; check_case(&CASES[2]); }
static void test_gnn(void **state) { (void)state; check_case(&CASES[3]); }
static void test_linear(void **state) { (void)state; check_case(&CASES[4]); }
static void test_seq(void **state) { (void)state; check_case(&CASES[5]); }
static void test_cnn(void **state) { (void)state; check_case(&CASES[6]); }
static void test_gpt(void **state) { (void)state; check_case(&CASES[7]); }

/* Every built-in model has a case above. */
static void test_every_model(void **state)
{
    (void)state;
    for (size_t i = 0; ls_model_at(i) != NULL; i++) {
        int found = 0;
        for (size_t k = 0; k < N_CASES; k++)
            found |= strcmp(CASES[k].model, ls_model_at(i)->name) == 0;
        if (!found)
            fail_msg("model %s has no case in test_plan", ls_model_at(i)->name);
    }
}

/* reduce=unordered is the foil's plan, whatever the model promises; and
 * the text says so. */
static void test_unordered(void **state)
{
    (void)state;
    ls_config *cfg = case_config(&CASES[0]);
    ls_err err = { "" };
    assert_int_equal(ls_config_set(cfg, "reduce", "unordered", &err), LS_OK);
    uint64_t traj[3];
    plan p;
    run_case(cfg, 2, 2, traj, &p);
    assert_int_equal(p.reduce, PLAN_UNORDERED);
    assert_int_equal(p.finish_folded, 1);   /* the mlp's finish is still folded into the update */
    char text[2048];
    size_t n = plan_describe(&p, "mlp", text, sizeof text);
    assert_int_equal(n, strlen(text));
    assert_non_null(strstr(text, "unordered"));
    /* A short buffer: cut, terminated, the full length returned. */
    char small[16];
    assert_int_equal(plan_describe(&p, "mlp", small, sizeof small), n);
    assert_int_equal(strlen(small), sizeof small - 1);
    ls_config_destroy(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_model), cmocka_unit_test(test_mlp),    cmocka_unit_test(test_logic),
        cmocka_unit_test(test_logic_ca),    cmocka_unit_test(test_gnn),    cmocka_unit_test(test_linear),
        cmocka_unit_test(test_seq),         cmocka_unit_test(test_cnn), cmocka_unit_test(test_gpt),
        cmocka_unit_test(test_unordered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
