/* session.h — the engine side of a session (include/lockstep.h's
 * ls_session): the trainer under it, for tools that look inside a model
 * (export, render) and for benchmarks. */
#ifndef LS_SESSION_H
#define LS_SESSION_H

#include "../include/lockstep.h"
#include "train.h"

trainer *session_trainer(ls_session *s);   /* NULL when a reopened run had nothing to do */

/* Record key=value among the run's settings (run_settings) when the
 * session records; nothing otherwise. For facts of how a run was trained
 * that are not its config, as the MPI ranks and hosts (tools/mpi_main.c). */
ls_status session_note_setting(ls_session *s, const char *key, const char *value, ls_err *err);

#endif
