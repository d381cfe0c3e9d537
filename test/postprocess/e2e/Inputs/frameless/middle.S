/* A function that never moves sp and still calls, as GCC emits for a callee that needs no
 * stack alignment: its only CFI row is CFA = rsp + 8 (record-frameless-callers.test). */
        .text
        .globl  middle
        .type   middle, @function
middle:
        .cfi_startproc
        call    burn
        ret
        .cfi_endproc
        .size   middle, .-middle

        .section .note.GNU-stack,"",@progbits
