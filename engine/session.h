/* session.h — the engine side of a session (include/lockstep.h's
 * ls_session): the trainer under it, for tools that look inside a model
 * (export, render) and for benchmarks. */
#ifndef LS_SESSION_H
#define LS_SESSION_H

#include "../include/lockstep.h"
#include "train.h"

trainer *session_trainer(ls_session *s);   /* NULL when a reopened run had nothing to do */

#endif
