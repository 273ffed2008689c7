/* session_env.c — the facts of where and how a run is trained that are not
 * its config: the host, the CPU model, the compiler, the build flags with the
 * SIMD path the dense kernels take, the git commit. A new run records them
 * with the run (runlog_run_info) and every process that works on a run, new
 * or resumed, with its row in run_processes (session_claim); both read them
 * here, so they are gathered in one place and written down alike. The only
 * file of the session that includes the build facts ("buildinfo.h", generated
 * by the Makefile).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "buildinfo.h"
#include "engine/core/session_impl.h"
#include "engine/num/dense.h"


static void read_cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon != NULL) {
                colon++;
                while (*colon == ' ' || *colon == '\t')
                    colon++;
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(buf, len, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
}

void session_env_read(session_env *e)
{
    memset(e, 0, sizeof *e);
    snprintf(e->host, sizeof e->host, "unknown");
    gethostname(e->host, sizeof e->host - 1);
    read_cpu_model(e->cpu, sizeof e->cpu);
    snprintf(e->cflags, sizeof e->cflags, "%s; simd %s", LS_BUILD_CFLAGS, dense_simd_name());
    snprintf(e->build, sizeof e->build, "lockstep %s; %s; %s%s%s", LS_VERSION_STRING, LS_BUILD_CC, e->cflags,
             LS_BUILD_GIT[0] ? "; git " : "", LS_BUILD_GIT);
    e->compiler = LS_BUILD_CC;
    e->git = LS_BUILD_GIT[0] ? LS_BUILD_GIT : NULL;
}
