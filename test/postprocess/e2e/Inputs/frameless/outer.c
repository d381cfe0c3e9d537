/* Built with frame pointers: main -> outer -> middle (record-frameless-callers.test). */
void middle(long k);
void burn(long k);

__attribute__((noinline)) int outer(long k) {
    middle(k);
    return 1;
}

extern volatile unsigned long sink;

/* main_frameless.S's callee (not a tail call: it stays on the stack). */
__attribute__((noinline)) void burn_long(void) {
    burn(600000000L);
    sink += 1;
}

#ifndef NO_MAIN
int main(void) {
    return outer(600000000L) - 1;
}
#endif
