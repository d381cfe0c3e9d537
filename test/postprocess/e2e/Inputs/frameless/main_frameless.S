/* A main that never moves sp and calls: `main: call burn_long; xor eax, eax; ret`
 * (record-frameless-callers.test). */
        .text
        .globl  main
        .type   main, @function
main:
        .cfi_startproc
        call    burn_long
        xorl    %eax, %eax
        ret
        .cfi_endproc
        .size   main, .-main

        .section .note.GNU-stack,"",@progbits
