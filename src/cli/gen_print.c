/* src/cli/gen_print.c: how `memwall generate` prints a token, shared by its plain, batched and
 * speculative paths (below them all, so none of them calls another to print). */
#include <stdio.h>

#include "engine.h"
#include "generate.h"

void mw_gen_print_piece(const char *piece)
{
	if (!piece || !piece[0])
		return;
	if (!piece[1]) {
		unsigned char b = (unsigned char)piece[0];
		if (b < 0x20 && b != '\n' && b != '\t')
			return;
	}
	fputs(piece, stdout);
}

void mw_gen_print_engine_bytes(FILE *f, double weights, double kv_read, double kv_write)
{
	fprintf(f, " engine_bytes_per_token=%.0f weights_per_token=%.0f kv_read_per_token=%.0f "
		"kv_write_per_token=%.0f", weights + kv_read + kv_write, weights, kv_read, kv_write);
}
