/* The libFuzzer entry points the harnesses define and tests/fuzz/
 * replay.c calls. */
#ifndef LC_FUZZ_H
#define LC_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* LC_FUZZ_H */
