/*
 * Runs a libFuzzer target over files and directories of inputs, for builds
 * without libFuzzer: the seed corpus then becomes a regression test.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "readfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static unsigned replayed;

static int replay_file(const char *path)
{
	char why[128];
	size_t len;
	char *buf = readfile(path, 0, false, &len, why, sizeof(why));
	if (!buf) {
		fprintf(stderr, "%s: %s\n", path, why);
		return -1;
	}
	/* an exact-size copy so ASan catches reads past the input */
	uint8_t *exact = malloc(len ? len : 1);
	if (len)
		memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	replayed++;
	return 0;
}

static int replay_path(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path);
	DIR *d = opendir(path);
	if (!d) {
		perror(path);
		return -1;
	}
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char child[4096];
		snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
		if (replay_path(child) < 0)
			rc = -1;
	}
	closedir(d);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;
	LLVMFuzzerInitialize(&argc, &argv);     /* as libFuzzer does */
	for (int i = 1; i < argc; i++)
		if (replay_path(argv[i]) < 0)
			rc = 1;
	printf("replayed %u inputs\n", replayed);
	if (replayed == 0) {
		fprintf(stderr, "no inputs found\n");
		return 1;
	}
	return rc;
}
