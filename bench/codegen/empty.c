/* bench: the empty program (start-up and exit cost only). */
int main(void) {
    return 0;
}
