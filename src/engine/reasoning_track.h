/* reasoning_track: a completion's thinking block followed in its output
 * text (nucleus_reasoning_params): whether the reply opens one (its first
 * bytes, blanks aside, are the open marker), where it closes, and how many
 * tokens it took. The engine feeds it each generated token's text; it
 * decides the budget (the engine forces the close marker) and where an
 * answer-only grammar starts. */
#ifndef NC_REASONING_TRACK_H
#define NC_REASONING_TRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nucleus.h"

typedef enum nc_think_phase {
  NC_THINK_OFF,     /* nothing tracked (no close marker) */
  NC_THINK_OPENING, /* the reply may still open the block */
  NC_THINK_INSIDE,  /* in the block */
  NC_THINK_AFTER,   /* the block closed, or the reply opened none */
} nc_think_phase;

/* Bytes kept between pieces: the reply's first bytes while it may still
 * open the block (blanks, then the open marker's start), or the end of the
 * block that may begin the close marker. */
#define NC_THINK_KEEP (2 * NUCLEUS_MAX_REASONING_MARKER_BYTES)

typedef struct nc_reasoning_track {
  nc_think_phase phase;
  const char *open, *close; /* borrowed from the request's params */
  char keep[NC_THINK_KEEP];
  size_t n_keep;
  int32_t inside;  /* tokens generated in the block (the budget's count) */
  int32_t tokens;  /* the block's tokens, its markers included (usage) */
  int32_t pending; /* OPENING: tokens that may turn out to open a block */
} nc_reasoning_track;

void nc_reasoning_track_init(nc_reasoning_track *t,
                             const nucleus_reasoning_params *p);

/* Feeds one generated token's text. Returns the offset in piece where the
 * answer begins when this token closed the block (the byte after the close
 * marker), else SIZE_MAX. */
size_t nc_reasoning_track_push(nc_reasoning_track *t, const char *piece,
                               size_t n);

/* The bytes of the close marker the block already ends with (a partial
 * marker the budget's forced close completes). */
size_t nc_reasoning_track_partial_close(const nc_reasoning_track *t);

#endif
