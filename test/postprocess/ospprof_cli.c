/*
 * ospprof-cli — run the post-processor on a raw profile (docs/spec/profiler.md §(e)–(h)) without
 * the driver: used by the consumer tests, the benchmarks and by hand.
 *
 *   ospprof-cli <raw.json> [-o <prefix>] [--binary <exe>] [--program <source>]
 *               [--no-report] [--color]
 *
 * Exit 0 on success, 1 with "ospprof-cli: error: <message>" on failure.
 */
#include "ospprof.h"

#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    ospprof_options o = {0};
    bool report = true, color = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            o.output_prefix = argv[++i];
        else if (strcmp(argv[i], "--binary") == 0 && i + 1 < argc)
            o.binary = argv[++i];
        else if (strcmp(argv[i], "--program") == 0 && i + 1 < argc)
            o.program = argv[++i];
        else if (strcmp(argv[i], "--no-report") == 0)
            report = false;
        else if (strcmp(argv[i], "--color") == 0)
            color = true;
        else if (!o.raw_path && argv[i][0] != '-')
            o.raw_path = argv[i];
        else {
            fprintf(stderr, "usage: ospprof-cli <raw.json> [-o prefix] [--binary exe] "
                            "[--program source] [--no-report] [--color]\n");
            return 2;
        }
    }
    if (!o.raw_path) {
        fprintf(stderr, "ospprof-cli: error: no raw profile given\n");
        return 2;
    }
    if (!o.output_prefix) o.output_prefix = "profile";
    o.report = report ? stdout : NULL;
    o.color = color || ospprof_color_wanted(stdout);
    char err[OSPPROF_ERR_MAX];
    if (ospprof_run(&o, err, sizeof err) != 0) {
        fprintf(stderr, "ospprof-cli: error: %s\n", err);
        return 1;
    }
    return 0;
}
