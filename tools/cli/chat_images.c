/* chat_images: images held for and sent in a chat (chat_images.h). */
#include "chat_images.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_io.h"

int chat_images_attach(chat_images *ci, const char *path) {
  if (!ci->mmproj) {
    fprintf(stderr, "error: /image needs a vision projector: start nucleus "
                    "chat with --mmproj FILE\n");
    return -1;
  }
  if (ci->n_sent + ci->n_held == NUCLEUS_MAX_IMAGES) {
    fprintf(stderr,
            "error: /image: a conversation takes at most %d images "
            "(/reset starts over)\n",
            NUCLEUS_MAX_IMAGES);
    return -1;
  }
  size_t len = 0;
  char *bytes = cli_read_file(path, &len);
  if (!bytes) {
    fprintf(stderr, "error: /image: cannot read %s: %s\n", path,
            strerror(errno));
    return -1;
  }
  nucleus_image *img = NULL;
  nucleus_error err = {0};
  nucleus_status rc = nucleus_image_decode(bytes, len, NULL, &img, &err);
  free(bytes);
  if (rc != NUCLEUS_OK) {
    fprintf(stderr, "error: /image %s: %s\n", path, err.message);
    return -1;
  }
  ci->v[ci->n_sent + ci->n_held++] = img;
  int32_t w, h;
  nucleus_image_size(img, &w, &h);
  fprintf(stderr, "(image %dx%d attached: it goes with your next message)\n",
          (int)w, (int)h);
  return 0;
}

char *chat_images_message(chat_images *ci, const char *text) {
  const char *marker = NUCLEUS_MEDIA_MARKER;
  if (ci->n_held && strstr(text, marker)) {
    fprintf(stderr,
            "error: the message holds %s, the images' marker: "
            "reword it\n",
            marker);
    return NULL;
  }
  size_t ml = strlen(marker), tl = strlen(text);
  char *out = malloc(ml * (size_t)ci->n_held + tl + 1);
  if (!out) return NULL;
  for (int i = 0; i < ci->n_held; i++)
    memcpy(out + ml * (size_t)i, marker, ml);
  memcpy(out + ml * (size_t)ci->n_held, text, tl + 1);
  ci->last_turn = ci->n_held;
  ci->n_sent += ci->n_held;
  ci->n_held = 0;
  return out;
}

void chat_images_forget_turn(chat_images *ci) {
  for (int i = 0; i < ci->last_turn; i++)
    nucleus_image_free(ci->v[--ci->n_sent]);
  ci->last_turn = 0;
}

void chat_images_clear(chat_images *ci) {
  for (int i = 0; i < ci->n_sent + ci->n_held; i++)
    nucleus_image_free(ci->v[i]);
  ci->n_sent = ci->n_held = ci->last_turn = 0;
}

nucleus_status chat_images_tokenize(const chat_images *ci,
                                    const nucleus_model *model,
                                    const char *text, size_t len, int32_t **ids,
                                    size_t *n, nucleus_error *err) {
  return nucleus_tokenize_with_images(model, ci->mmproj, text, len,
                                      (const nucleus_image *const *)ci->v,
                                      (size_t)ci->n_sent, ids, n, err);
}
