/* The smallest program over libnucleus: load a model, generate greedily from
 * a prompt, print the text and the finish reason.
 *   cc generate.c $(pkg-config --cflags --libs nucleus) -o generate
 *   ./generate [MODEL [PROMPT [MAX_TOKENS]]]    MODEL defaults to
 * $NUCLEUS_MODEL
 */
#include <nucleus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : getenv("NUCLEUS_MODEL");
  const char *prompt = argc > 2 ? argv[2] : "The three primary colors are";
  nucleus_request_params rp = nucleus_request_default_params();
  rp.sampling.temperature = 0; /* greedy */
  rp.max_tokens = argc > 3 ? atoi(argv[3]) : 32;
  if (!path) {
    fprintf(stderr, "usage: generate MODEL [PROMPT [MAX_TOKENS]]\n");
    return 2;
  }
  nucleus_model_params mp = nucleus_model_default_params();
  nucleus_engine_params ep = nucleus_engine_default_params();
  nucleus_model *model = NULL;
  nucleus_engine *engine = NULL;
  nucleus_request *req = NULL;
  int32_t *ids = NULL;
  size_t n_ids = 0;
  nucleus_error err = {0};
  nucleus_event ev;
  int rc = 1;
  if (nucleus_model_load(path, &mp, &model, &err) != NUCLEUS_OK ||
      nucleus_tokenize(model, prompt, strlen(prompt), true, true, &ids, &n_ids,
                       &err) != NUCLEUS_OK ||
      nucleus_engine_create(model, &ep, &engine, &err) != NUCLEUS_OK ||
      nucleus_engine_submit(engine, ids, n_ids, &rp, &req, &err) !=
          NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    goto done;
  }
  fputs(prompt, stdout);
  while (nucleus_request_next_event(req, &ev, -1) == NUCLEUS_OK &&
         ev.kind != NUCLEUS_EVENT_DONE) {
    if (ev.kind == NUCLEUS_EVENT_TOKEN) fwrite(ev.text, 1, ev.text_len, stdout);
    if (ev.kind == NUCLEUS_EVENT_FINISH)
      printf("\nfinish: %s\n", nucleus_finish_reason_name(ev.finish_reason));
  }
  rc = 0;
done:
  nucleus_request_free(req);
  nucleus_engine_free(engine);
  nucleus_free(ids);
  nucleus_model_free(model);
  return rc;
}
