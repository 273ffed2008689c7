/* api_size.h — the size field that opens every descriptor and option struct
 * of include/lockstep.h (ls_model_desc, ls_task_desc, ls_session_opts,
 * ls_equiv_opts): sizeof the struct as the caller compiled it, as SQLite's
 * iVersion. A caller built against another layout of the struct is refused
 * with LS_EINVAL naming the struct and both sizes, instead of having its
 * fields read at the wrong offsets. The sizes known are this header's; when a
 * struct grows at its end, the old size joins them (the fields past it read
 * as zero). Used by the registry, ls_equiv and the session's open. */
#ifndef LS_API_SIZE_H
#define LS_API_SIZE_H

#include <stddef.h>

#include "include/lockstep.h"

/* LS_OK when got is known for struct `type` (known: this library's sizeof);
 * else LS_EINVAL naming type, who (a model's or task's name, or NULL) and
 * both sizes. */
ls_status api_size_check(const char *type, const char *who, size_t got, size_t known, ls_err *err);
/* A session's options: NULL (every default) or a known size. */
ls_status api_size_session_opts(const ls_session_opts *opts, ls_err *err);

#endif
