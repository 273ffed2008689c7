/* session.h — the engine side of a session (include/lockstep.h's
 * ls_session): the trainer under it, for tools that look inside a model
 * (export, render) and for benchmarks. */
#ifndef LS_SESSION_H
#define LS_SESSION_H

#include "include/lockstep.h"
#include "engine/core/train.h"

trainer *session_trainer(ls_session *s);   /* NULL when a reopened run had nothing to do */
/* A restore that recomputes no step loads no data (session_reopen.c): its
 * trainer's trainer_data is NULL. This loads them into the session's
 * trainer (made again: call session_trainer after it), checked against the
 * config's data_hash (LS_EMISMATCH when they changed); nothing to do when
 * the data are there. */
ls_status session_need_data(ls_session *s, ls_err *err);

/* Record key=value among the run's settings (run_settings) when the
 * session records; nothing otherwise. For facts of how a run was trained
 * that are not its config, as the MPI ranks and hosts (tools/mpi_main.c). */
ls_status session_note_setting(ls_session *s, const char *key, const char *value, ls_err *err);
/* LS_REOPEN_AUDIT of run run_id's steps from+1..to alone (state.target =
 * to), starting from a checkpoint registered at step `from` (θ_0 when from
 * is 0), checked against its registration and the record's parameter hash
 * at that step; none usable is LS_EMISMATCH naming step `from`. For
 * engine/core/audit.c, which replays the segments between checkpoints at once. */
ls_status session_reopen_segment(ls_session **out, const char *db, int64_t run_id, int64_t from, int64_t to,
                                 const ls_session_opts *opts, ls_err *err);

#endif
