/* registry.c — the registry of models and tasks: the built-in ones (listed
 * in engine/builtins.c) and the ones added at run time, whose size field is
 * checked before any other (engine/core/api_size.h). Registration takes
 * a mutex, so two threads registering at once cannot corrupt the table; lookups read entries that never change
 * once published (the count is published after the entry). */
#include "engine/core/registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/core/api_size.h"
#include "engine/core/config.h"

/* The built-in models and tasks are listed in engine/builtins.c, the one
 * file that names them all: the core finds them only through these tables. */
#define MAX_EXTRA 64
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const ls_model_desc *extra_models[MAX_EXTRA];
/* Registered descriptors, copied at the layout of this library: one of an
 * older, shorter layout reads its missing fields as zero (a task's copy
 * says so in its size). */
static ls_model_desc extra_model_copies[MAX_EXTRA];
static const ls_task_desc *extra_tasks[MAX_EXTRA];
static ls_task_desc extra_task_copies[MAX_EXTRA];
static atomic_size_t n_extra_models, n_extra_tasks;

const ls_model_desc *ls_model_at(size_t i)
{
    if (i < registry_n_builtin_models)
        return registry_builtin_models[i];
    i -= registry_n_builtin_models;
    return i < atomic_load(&n_extra_models) ? extra_models[i] : NULL;
}

const ls_task_desc *ls_task_at(size_t i)
{
    if (i < registry_n_builtin_tasks)
        return registry_builtin_tasks[i];
    i -= registry_n_builtin_tasks;
    return i < atomic_load(&n_extra_tasks) ? extra_tasks[i] : NULL;
}

const ls_model_desc *ls_model_find(const char *name)
{
    for (size_t i = 0; name != NULL && ls_model_at(i) != NULL; i++)
        if (strcmp(ls_model_at(i)->name, name) == 0)
            return ls_model_at(i);
    return NULL;
}

const ls_task_desc *ls_task_find(const char *name)
{
    for (size_t i = 0; name != NULL && ls_task_at(i) != NULL; i++)
        if (strcmp(ls_task_at(i)->name, name) == 0)
            return ls_task_at(i);
    return NULL;
}

static ls_status check_name(const char *what, const char *name, ls_err *err)
{
    size_t n = name != NULL ? strlen(name) : 0;
    if (n == 0 || n > 15 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
        return ls_fail(err, LS_EINVAL, "%s name '%s' is not 1 to 15 of [a-z0-9-]", what, name ? name : "(null)");
    return LS_OK;
}

ls_status ls_register_model(const ls_model_desc *d, ls_err *err)
{
    if (d == NULL)
        return ls_fail(err, LS_EINVAL, "ls_register_model: no descriptor");
    /* The size first: with another layout, every other field is misread. */
    ls_status st = d->size == LS_MODEL_DESC_SIZE_1_0 ? LS_OK
                                                      : api_size_check("ls_model_desc", NULL, d->size, sizeof *d, err);
    if (st != LS_OK)
        return st;
    if ((st = check_name("model", d->name, err)) != LS_OK)
        return st;
    if (d->create == NULL || d->destroy == NULL || d->init == NULL || d->leaf == NULL || d->finish == NULL)
        return ls_fail(err, LS_EINVAL, "model %s: create, destroy, init, leaf and finish are required", d->name);
    if ((st = config_check_keys(d->name, d->keys, d->n_keys, err)) != LS_OK)
        return st;
    pthread_mutex_lock(&lock);
    if (ls_model_find(d->name) != NULL)
        st = ls_fail(err, LS_EEXIST, "model %s is already registered", d->name);
    else if (atomic_load(&n_extra_models) == MAX_EXTRA)
        st = ls_fail(err, LS_EINVAL, "model %s: the registry holds at most %d added models", d->name, MAX_EXTRA);
    else {
        const size_t i = atomic_load(&n_extra_models);
        memset(&extra_model_copies[i], 0, sizeof extra_model_copies[i]);
        memcpy(&extra_model_copies[i], d, d->size);
        extra_models[i] = &extra_model_copies[i];
        atomic_fetch_add(&n_extra_models, 1);
    }
    pthread_mutex_unlock(&lock);
    return st;
}

/* A task's defaults, as text: each entry a model and "key=value" lines. The
 * keys are checked when a config is made (the model may register later);
 * here the form, so that "batch=20 lr=0.1" on one line is named now rather
 * than as a bad batch size at the first run. */
static ls_status check_task_defaults(const ls_task_desc *d, ls_err *err)
{
    for (const ls_task_defaults *e = d->defaults; e != NULL && e->model != NULL; e++) {
        if (e->settings == NULL)
            return ls_fail(err, LS_EINVAL, "task %s: defaults for %s: no settings", d->name, e->model);
        int line = 0;
        for (const char *p = e->settings; *p != '\0';) {
            const size_t len = strcspn(p, "\n");
            line++;
            size_t k = 0;
            while (k < len && ((p[k] >= 'a' && p[k] <= 'z') || (p[k] >= '0' && p[k] <= '9') || p[k] == '_'))
                k++;
            int two = 0;   /* a space, then another key= on the same line */
            for (size_t i = k; i < len && !two; i++)
                if (p[i] == ' ') {
                    size_t j = i + 1;
                    while (j < len && ((p[j] >= 'a' && p[j] <= 'z') || p[j] == '_'))
                        j++;
                    two = j > i + 1 && j < len && p[j] == '=';
                }
            if (len > 0 && (k == 0 || k == len || p[k] != '=' || two))
                return ls_fail(err, LS_EINVAL, "task %s: defaults for %s, line %d '%.*s': want one key=value a line "
                               "(lines end with \\n)", d->name, e->model, line, (int)(len > 60 ? 60 : len), p);
            p += len + (p[len] == '\n');
        }
    }
    return LS_OK;
}

ls_status ls_register_task(const ls_task_desc *d, ls_err *err)
{
    if (d == NULL)
        return ls_fail(err, LS_EINVAL, "ls_register_task: no descriptor");
    ls_status st = d->size == LS_TASK_DESC_SIZE_1_0 ? LS_OK
                                                    : api_size_check("ls_task_desc", NULL, d->size, sizeof *d, err);
    if (st != LS_OK)
        return st;
    if ((st = check_name("task", d->name, err)) != LS_OK)
        return st;
    if (d->models == NULL || d->models[0] == '\0')
        return ls_fail(err, LS_EINVAL, "task %s: names no model that trains it", d->name);
    if (d->load == NULL)
        return ls_fail(err, LS_EINVAL, "task %s: load is required (it may return no data)", d->name);
    if ((d->switch_key == NULL) != (d->switch_settings == NULL))
        return ls_fail(err, LS_EINVAL, "task %s: switch_key and switch_settings go together", d->name);
    if ((st = config_check_keys(d->name, d->keys, d->n_keys, err)) != LS_OK)
        return st;
    if ((st = check_task_defaults(d, err)) != LS_OK)
        return st;
    if (d->n_sources > LS_MAX_SOURCES)
        return ls_fail(err, LS_EINVAL, "task %s: %zu sources (at most %d)", d->name, d->n_sources, LS_MAX_SOURCES);
    if ((st = config_check_keys(d->name, d->sources, d->n_sources, err)) != LS_OK)
        return st;
    pthread_mutex_lock(&lock);
    if (ls_task_find(d->name) != NULL)
        st = ls_fail(err, LS_EEXIST, "task %s is already registered", d->name);
    else if (atomic_load(&n_extra_tasks) == MAX_EXTRA)
        st = ls_fail(err, LS_EINVAL, "task %s: the registry holds at most %d added tasks", d->name, MAX_EXTRA);
    else {
        const size_t i = atomic_load(&n_extra_tasks);
        memset(&extra_task_copies[i], 0, sizeof extra_task_copies[i]);
        memcpy(&extra_task_copies[i], d, d->size);
        extra_task_copies[i].size = sizeof extra_task_copies[i];   /* the copy has this library's layout */
        extra_tasks[i] = &extra_task_copies[i];
        atomic_fetch_add(&n_extra_tasks, 1);
    }
    pthread_mutex_unlock(&lock);
    return st;
}
