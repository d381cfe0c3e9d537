/* Program start: initialise the runtime and boot the profiler (LANGUAGE.md §14.1). */
#include "osprey_rt.h"
#include "osp_prof.h"

void osp_rt_start(int argc, char **argv) {
    (void)argc;
    (void)argv;
    osp_prof_boot();
}
