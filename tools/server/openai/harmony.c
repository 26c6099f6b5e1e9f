/* nucleus serve: the harmony request pieces (harmony.h). */
#include "harmony.h"

#include <string.h>

bool harmony_model(const nucleus_model *model) {
  return !strcmp(nucleus_model_tool_format(model), "harmony");
}

void harmony_message(json_t *msg, const json_t *src) {
  const json_t *rc = json_object_get(src, "reasoning_content");
  if (json_is_string(rc) && json_string_length(rc))
    json_object_set(msg, "thinking", (json_t *)rc);
  const json_t *calls = json_object_get(msg, "tool_calls");
  if (!json_is_array(calls)) return;
  json_t *copy = json_deep_copy(calls);
  if (!copy) return;
  size_t i;
  json_t *c;
  json_array_foreach(copy, i, c) {
    json_t *fn = json_object_get(c, "function");
    const json_t *args = json_object_get(fn, "arguments");
    if (!json_is_string(args)) continue;
    json_t *obj =
        json_loadb(json_string_value(args), json_string_length(args), 0, NULL);
    if (json_is_object(obj))
      json_object_set_new(fn, "arguments", obj);
    else
      json_decref(obj);
  }
  json_object_set_new(msg, "tool_calls", copy);
}
