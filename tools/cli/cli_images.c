/* cli_images: the image prompt of `nucleus run` (cli_images.h). */
#include "cli_images.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli_io.h"

int cli_images_prompt(const nucleus_model *model,
                      const nucleus_model_params *mp, const char *mmproj_path,
                      const char *const *paths, int n_paths, const char *text,
                      cli_images *out) {
  memset(out, 0, sizeof *out);
  nucleus_error err = {0};
  if (nucleus_mmproj_load(mmproj_path, model, mp, &out->mmproj, &err) !=
      NUCLEUS_OK) {
    fprintf(stderr, "error: --mmproj %s: %s\n", mmproj_path, err.message);
    return -1;
  }
  for (int i = 0; i < n_paths; i++) {
    size_t len = 0;
    char *bytes = cli_read_file(paths[i], &len);
    if (!bytes) {
      fprintf(stderr, "error: cannot read %s: %s\n", paths[i], strerror(errno));
      return -1;
    }
    nucleus_status rc =
        nucleus_image_decode(bytes, len, NULL, &out->images[i], &err);
    free(bytes);
    if (rc != NUCLEUS_OK) {
      fprintf(stderr, "error: --image %s: %s\n", paths[i], err.message);
      return -1;
    }
    out->n_images = i + 1;
  }
  /* as llama-mtmd-cli: a marker per image before the text, one user turn */
  size_t ml = strlen(NUCLEUS_MEDIA_MARKER), tl = strlen(text);
  char *content = malloc(ml * (size_t)n_paths + tl + 1);
  if (!content) return -1;
  for (int i = 0; i < n_paths; i++)
    memcpy(content + ml * (size_t)i, NUCLEUS_MEDIA_MARKER, ml);
  memcpy(content + ml * (size_t)n_paths, text, tl + 1);
  json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", content);
  free(content);
  char *messages = msgs ? json_dumps(msgs, JSON_COMPACT) : NULL;
  json_decref(msgs);
  if (!messages) return -1;
  char *rendered = NULL;
  size_t rlen = 0;
  nucleus_status rc =
      nucleus_chat_render(model, messages, NULL, true, &rendered, &rlen, &err);
  free(messages);
  if (rc == NUCLEUS_OK)
    rc = nucleus_tokenize_with_images(model, out->mmproj, rendered, rlen,
                                      (const nucleus_image *const *)out->images,
                                      (size_t)out->n_images, &out->ids,
                                      &out->n_ids, &err);
  nucleus_free(rendered);
  if (rc != NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    return -1;
  }
  return 0;
}

void cli_images_free(cli_images *ci) {
  for (int i = 0; i < ci->n_images; i++)
    nucleus_image_free(ci->images[i]);
  nucleus_free(ci->ids);
  nucleus_mmproj_free(ci->mmproj);
  memset(ci, 0, sizeof *ci);
}
