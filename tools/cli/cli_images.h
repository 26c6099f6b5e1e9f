/* cli_images: `nucleus run --mmproj FILE --image FILE`: the projector, the
 * decoded images, and the prompt as llama-mtmd-cli builds it (the model's
 * chat template, one user turn: a media marker per image, then the text). */
#ifndef CLI_IMAGES_H
#define CLI_IMAGES_H

#include "nucleus.h"

#define CLI_MAX_IMAGES NUCLEUS_MAX_IMAGES

typedef struct cli_images {
  nucleus_mmproj *mmproj;
  nucleus_image *images[CLI_MAX_IMAGES];
  int n_images;
  int32_t *ids; /* the prompt, each image a run of NUCLEUS_TOKEN_IMAGE */
  size_t n_ids;
} cli_images;

/* Loads mmproj_path for model, decodes each of paths, renders text as one
 * user turn with a marker per image before it, and tokenizes it; prints
 * the error and returns -1 on failure (out then holds what to free). */
int cli_images_prompt(const nucleus_model *model,
                      const nucleus_model_params *mp, const char *mmproj_path,
                      const char *const *paths, int n_paths, const char *text,
                      cli_images *out);
void cli_images_free(cli_images *ci);

#endif
