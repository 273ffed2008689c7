/* registry.h — the models and tasks the engine knows: the built-in ones,
 * listed in one table in registry.c, and those added at run time with
 * ls_register_model / ls_register_task (include/lockstep.h). Lookups by
 * name and index are the public ls_model_find, ls_task_find, ls_model_at
 * and ls_task_at. Adding a built-in model or task is one file exporting its
 * descriptor and one line in registry.c's table. */
#ifndef LS_REGISTRY_H
#define LS_REGISTRY_H

#include "../include/lockstep.h"

#endif
