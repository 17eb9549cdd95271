/* A main() for the libFuzzer harnesses without libFuzzer: runs each file
 * named on the command line (or each file in a directory) through
 * LLVMFuzzerTestOneInput once.  For replaying corpora and reproducers
 * in make check with any compiler. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		perror(path);
		return -1;
	}
	buf = malloc(n ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	size_t runs = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *de;

		if (stat(argv[i], &st) || !S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]) < 0)
				return 1;
			runs++;
			continue;
		}
		d = opendir(argv[i]);
		while (d && (de = readdir(d))) {
			char path[4096];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (run_file(path) < 0)
				return 1;
			runs++;
		}
		if (d)
			closedir(d);
	}
	printf("replayed %zu inputs\n", runs);
	return 0;
}
