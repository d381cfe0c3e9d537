/* bench: a small stack-machine interpreter over tagged instructions with string opcodes, as
 * interp.osp. */
#include <stdio.h>
#include <string.h>
typedef enum { PUSH, OP, JUMP } kind;
typedef struct instr {
    kind k;
    long v;
    const char *name;
} instr;
int main(void) {
    const instr code[] = {{PUSH, 5, 0}, {OP, 0, "dbl"}, {OP, 0, "inc"}, {OP, 0, "nop"},
                          {PUSH, 7, 0}, {OP, 0, "neg"}, {OP, 0, "dbl"}, {JUMP, 1, 0}};
    long pc = 0, acc = 0;
    for (long steps = 80000000; steps > 0; steps--) {
        const instr *in = &code[pc];
        switch (in->k) {
        case PUSH:
            acc += in->v;
            pc++;
            break;
        case OP:
            if (strcmp(in->name, "dbl") == 0)
                acc = acc * 2 % 1000003;
            else if (strcmp(in->name, "inc") == 0)
                acc += 1;
            else if (strcmp(in->name, "neg") == 0)
                acc = 1000003 - acc;
            pc++;
            break;
        case JUMP: pc = in->v; break;
        }
    }
    printf("%ld\n", acc);
    return 0;
}
