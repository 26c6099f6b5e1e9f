/* reasoning_track: the thinking block in a completion's output
 * (reasoning_track.h). */
#include "reasoning_track.h"

#include <string.h>

void nc_reasoning_track_init(nc_reasoning_track *t,
                             const nucleus_reasoning_params *p) {
  memset(t, 0, sizeof *t);
  t->open = p->open;
  t->close = p->close;
  t->phase = !p->close ? NC_THINK_OFF
             : p->open ? NC_THINK_OPENING
                       : NC_THINK_INSIDE;
}

static bool blank(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* The longest proper prefix of lit that ends s[0, n). */
static size_t partial_tail(const char *s, size_t n, const char *lit) {
  size_t l = strlen(lit);
  for (size_t k = l - 1; k > 0; k--)
    if (k <= n && !memcmp(s + n - k, lit, k)) return k;
  return 0;
}

/* Keeps the last bytes of s[0, n) that may begin the close marker. */
static void keep_tail(nc_reasoning_track *t, const char *s, size_t n) {
  size_t k = partial_tail(s, n, t->close);
  memmove(t->keep, s + n - k, k);
  t->n_keep = k;
}

/* In the block: looks for the close marker in the kept bytes and text
 * [0, n) (the piece from its offset base). */
static size_t inside_push(nc_reasoning_track *t, const char *text, size_t n,
                          size_t base) {
  const size_t cl = strlen(t->close);
  char buf[NC_THINK_KEEP + NUCLEUS_MAX_REASONING_MARKER_BYTES];
  /* The marker can only end within the first cl bytes of new text or be
   * whole inside it: search the kept bytes joined to the first cl bytes,
   * then the text itself. */
  size_t head = n < cl ? n : cl;
  memcpy(buf, t->keep, t->n_keep);
  memcpy(buf + t->n_keep, text, head);
  const char *hit = memmem(buf, t->n_keep + head, t->close, cl);
  size_t end = SIZE_MAX; /* in text: one past the marker */
  if (hit)
    end = (size_t)(hit - buf) + cl - t->n_keep;
  else if ((hit = memmem(text, n, t->close, cl)))
    end = (size_t)(hit - text) + cl;
  if (end != SIZE_MAX) {
    t->phase = NC_THINK_AFTER;
    t->n_keep = 0;
    return base + end;
  }
  if (n >= cl) {
    keep_tail(t, text, n);
  } else { /* the kept bytes and the whole text */
    keep_tail(t, buf, t->n_keep + n);
  }
  return SIZE_MAX;
}

size_t nc_reasoning_track_push(nc_reasoning_track *t, const char *piece,
                               size_t n) {
  switch (t->phase) {
  case NC_THINK_OFF:
  case NC_THINK_AFTER: return SIZE_MAX;
  case NC_THINK_INSIDE:
    t->inside++;
    t->tokens++;
    return inside_push(t, piece, n, 0);
  case NC_THINK_OPENING: break;
  }
  t->pending++;
  const size_t ol = strlen(t->open);
  /* the reply so far: blanks, then what may be the open marker */
  for (size_t i = 0; i < n; i++) {
    if (t->n_keep == 0 && blank(piece[i])) continue;
    if (t->n_keep < ol) {
      if (piece[i] != t->open[t->n_keep]) { /* no block */
        t->phase = NC_THINK_AFTER;
        t->n_keep = 0;
        t->pending = 0;
        return SIZE_MAX;
      }
      t->keep[t->n_keep++] = piece[i];
      if (t->n_keep < ol) continue;
      /* opened: the rest of the piece is in the block */
      t->phase = NC_THINK_INSIDE;
      t->n_keep = 0;
      t->tokens = t->pending;
      t->pending = 0;
      return inside_push(t, piece + i + 1, n - i - 1, i + 1);
    }
  }
  return SIZE_MAX;
}

size_t nc_reasoning_track_partial_close(const nc_reasoning_track *t) {
  if (t->phase != NC_THINK_INSIDE) return 0;
  return partial_tail(t->keep, t->n_keep, t->close);
}
