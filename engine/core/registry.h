/* registry.h — the models and tasks the engine knows: the built-in ones,
 * listed in one table in engine/builtins.c, and those added at run time with
 * ls_register_model / ls_register_task (include/lockstep.h). Lookups by
 * name and index are the public ls_model_find, ls_task_find, ls_model_at
 * and ls_task_at. Adding a built-in model or task is one file exporting its
 * descriptor and one line in engine/builtins.c. The core reads the built-in
 * table only through the declarations below, so it never names a model or
 * a task. */
#ifndef LS_REGISTRY_H
#define LS_REGISTRY_H

#include <stddef.h>

#include "include/lockstep.h"

/* Defined in engine/builtins.c. */
extern const ls_model_desc *const registry_builtin_models[];
extern const size_t registry_n_builtin_models;
extern const ls_task_desc *const registry_builtin_tasks[];
extern const size_t registry_n_builtin_tasks;

#endif
