/* builtins.c — the built-in models and tasks: one line each. This is the
 * only file that names every model and task; the registry (engine/core/)
 * reads these tables and never learns what is behind them. It sits above
 * engine/models/ and engine/tasks/ (tools/check_layers.sh). */
#include "engine/core/registry.h"

#define BUILTIN_MODELS(X) X(mlp_model) X(logic_model) X(logic_ca_model) X(linear_model) X(gnn_model) X(seq_model) X(cnn_model) X(gpt_model)
#define BUILTIN_TASKS(X)                                                                                        \
    X(fashion_mnist_task) X(teacher_task) X(gol_task) X(checkerboard_task) X(arrays_task) X(atlas_task)           \
        X(karate_task) X(graph_edit_task) X(text_task)

#define DECLARE_MODEL(d) extern const ls_model_desc d;
#define DECLARE_TASK(d) extern const ls_task_desc d;
#define ENTRY(d) &d,
BUILTIN_MODELS(DECLARE_MODEL)
BUILTIN_TASKS(DECLARE_TASK)

const ls_model_desc *const registry_builtin_models[] = { BUILTIN_MODELS(ENTRY) };
const size_t registry_n_builtin_models = sizeof registry_builtin_models / sizeof registry_builtin_models[0];
const ls_task_desc *const registry_builtin_tasks[] = { BUILTIN_TASKS(ENTRY) };
const size_t registry_n_builtin_tasks = sizeof registry_builtin_tasks / sizeof registry_builtin_tasks[0];
