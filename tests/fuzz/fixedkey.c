/*
 * Every target hashes with one fixed secret instead of the process's
 * random one (lib/core/hashkey.c), so that an input whose effect depends on
 * which entries share a bucket does the same in every run.  libFuzzer
 * calls this once before the first input; replay.c does too.
 */
#include <stdint.h>

#include "hashkey.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char seed[] = "cr fuzz targets: a fixed hash key";
	(void)argc;
	(void)argv;
	hashkey_set(seed, sizeof(seed) - 1);
	return 0;
}
