/* chat_images: the images of a `nucleus chat --mmproj FILE` conversation.
 * `/image PATH` decodes a file and holds it for the next user message,
 * which then carries a NUCLEUS_MEDIA_MARKER per held image before its text
 * (llama-mtmd-cli's order); the conversation keeps every sent image in
 * order, as its rendered text holds their markers. */
#ifndef CLI_CHAT_IMAGES_H
#define CLI_CHAT_IMAGES_H

#include <stddef.h>

#include "nucleus.h"

typedef struct chat_images {
  nucleus_mmproj *mmproj; /* NULL: the chat takes no images */
  nucleus_image *v[NUCLEUS_MAX_IMAGES];
  int n_sent;    /* v[0..n_sent): in the history */
  int n_held;    /* v[n_sent..n_sent + n_held): for the next message */
  int last_turn; /* how many the last message carried */
} chat_images;

/* Decodes path and holds it for the next message; prints why not and
 * returns -1 (no --mmproj, unreadable, not an image, too many). */
int chat_images_attach(chat_images *ci, const char *path);

/* The next user message's content: a marker per held image, then text
 * (malloc'd; NULL when out of memory or when text itself holds the marker,
 * said on stderr). The held images become sent. */
char *chat_images_message(chat_images *ci, const char *text);

/* The last message did not go through: its images are dropped. */
void chat_images_forget_turn(chat_images *ci);

/* /reset: every image dropped (the projector stays). */
void chat_images_clear(chat_images *ci);

/* Tokenizes a rendered prompt that holds the sent images' markers. */
nucleus_status chat_images_tokenize(const chat_images *ci,
                                    const nucleus_model *model,
                                    const char *text, size_t len, int32_t **ids,
                                    size_t *n, nucleus_error *err);

#endif
