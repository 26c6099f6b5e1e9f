/* nucleus serve: grammars that force tool calls. */
#include "tool_grammar.h"

#include "structured.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The JSON Schema of one call's JSON in the format: {"name": NAME,
 * ARGS_KEY: parameters} for each tool allowed (anyOf when several). */
static json_t *call_schema(const json_t *tools, const tool_opts *o,
                           const char *args_key) {
  json_t *any = json_array();
  size_t i;
  const json_t *t;
  json_array_foreach(tools, i, t) {
    const json_t *fn = json_object_get(t, "function");
    const char *name = json_string_value(json_object_get(fn, "name"));
    if (o->choice == TOOL_CHOICE_NAMED && strcmp(name, o->name)) continue;
    const json_t *params = json_object_get(fn, "parameters");
    json_t *args =
        params ? json_deep_copy(params) : json_pack("{s:s}", "type", "object");
    /* The parameters are a schema document of their own: a resource (an
     * '$id'), so that their local refs ("#/$defs/Address", as pydantic
     * writes them) resolve against them, not against this wrapper. */
    if (json_is_object(args) && !json_object_get(args, "$id")) {
      char id[300];
      snprintf(id, sizeof id, "urn:nucleus:tool:%zu", i);
      json_object_set_new(args, "$id", json_string(id));
    }
    json_t *props = json_object();
    json_object_set_new(props, "name", json_pack("{s:s}", "const", name));
    json_object_set_new(props, args_key, args);
    json_array_append_new(any,
                          json_pack("{s:s,s:o,s:[s,s],s:b}", "type", "object",
                                    "properties", props, "required", "name",
                                    args_key, "additionalProperties", 0));
  }
  if (json_array_size(any) == 1) {
    json_t *one = json_incref(json_array_get(any, 0));
    json_decref(any);
    return one;
  }
  return json_pack("{s:o}", "anyOf", any);
}

typedef struct {
  const char *name;
  const char *trigger; /* the call opener a lazy grammar starts at */
  const char *args_key;
  const char *open, *sep, *close;   /* GBNF literals around the calls */
  const char *one_open, *one_close; /* around each call */
} format_syntax;

static const format_syntax SYNTAX[] = {
    {"generic", "<tool_call>", "arguments", "", "\"\\n\"", "",
     "\"<tool_call>\"", "\"</tool_call>\""},
    {"hermes", "<tool_call>", "arguments", "", "\"\\n\"", "",
     "\"<tool_call>\\n\"", "\"\\n</tool_call>\""},
    {"llama3", NULL, "parameters", "", "\"; \"", "", "", ""},
    {"mistral", "[TOOL_CALLS]", "arguments", "\"[TOOL_CALLS][\"", "\", \"",
     "\"]\"", "", ""},
    {"granite", "<|tool_call|>", "arguments", "\"<|tool_call|>[\"", "\", \"",
     "\"]\"", "", ""},
};

int tool_grammar_build(const json_t *tools, const tool_opts *o,
                       const char *format, nucleus_grammar **out,
                       api_error *e) {
  *out = NULL;
  if (!strcmp(format, "harmony")) return tool_grammar_harmony(tools, o, out, e);
  if (!strcmp(format, "gemma4")) return tool_grammar_gemma4(tools, o, out, e);
  const format_syntax *fs = NULL;
  for (size_t i = 0; i < sizeof SYNTAX / sizeof SYNTAX[0]; i++)
    if (!strcmp(SYNTAX[i].name, format)) fs = &SYNTAX[i];
  if (!fs)
    return api_fail(e, 400, "tool_choice",
                    "'tool_choice' that forces a call is not supported for "
                    "this model's call syntax (%s); use 'auto'",
                    format);
  json_t *schema = call_schema(tools, o, fs->args_key);
  char *text_schema = schema ? json_dumps(schema, JSON_COMPACT) : NULL;
  json_decref(schema);
  if (!text_schema) return api_fail(e, 500, NULL, "out of memory");
  char *gbnf = NULL;
  nucleus_error jerr = {0};
  nucleus_status jst = nucleus_json_schema_to_gbnf(
      text_schema, strlen(text_schema), &gbnf, &jerr);
  free(text_schema);
  if (jst == NUCLEUS_OK) structured_log_schema_notes(gbnf, "tools");
  if (jst != NUCLEUS_OK)
    return api_fail(e, jst == NUCLEUS_ERR_NOMEM ? 500 : 400, "tools",
                    "a tool's parameters are outside the supported JSON "
                    "Schema subset: %s",
                    jerr.message);
  /* The schema's start rule becomes "call"; the calls go around it. */
  char *at = strstr(gbnf, "root ::=");
  if (!at || (at != gbnf && at[-1] != '\n')) {
    nucleus_free(gbnf);
    return api_fail(e, 500, NULL, "tool grammar: no root rule");
  }
  memcpy(at, "call", 4); /* "root ::=" -> "call ::=" (same length) */
  at[4] = ' ';
  /* A named function is one call; "required" may make parallel calls, at
   * most one per tool (and TOOL_GRAMMAR_MAX_CALLS). */
  size_t max_calls =
      o->n_tools < TOOL_GRAMMAR_MAX_CALLS ? o->n_tools : TOOL_GRAMMAR_MAX_CALLS;
  char head[512];
  if (o->parallel && o->choice == TOOL_CHOICE_REQUIRED && max_calls > 1)
    snprintf(head, sizeof head,
             "root ::= %s one ( %s one ){0,%zu} %s\none ::= %s call %s\n",
             fs->open, fs->sep, max_calls - 1, fs->close, fs->one_open,
             fs->one_close);
  else
    snprintf(head, sizeof head, "root ::= %s one %s\none ::= %s call %s\n",
             fs->open, fs->close, fs->one_open, fs->one_close);
  size_t hl = strlen(head), gl = strlen(gbnf);
  char *text = malloc(hl + gl + 1);
  if (!text) {
    nucleus_free(gbnf);
    return api_fail(e, 500, NULL, "out of memory");
  }
  memcpy(text, head, hl);
  memcpy(text + hl, gbnf, gl + 1);
  nucleus_free(gbnf);
  nucleus_error err = {0};
  nucleus_status st =
      nucleus_grammar_create(text, strlen(text), NULL, out, &err);
  free(text);
  if (st != NUCLEUS_OK)
    return api_fail(e, st == NUCLEUS_ERR_NOMEM ? 500 : 400, "tools",
                    "the tools' call grammar: %s", err.message);
  return 0;
}

void tool_grammar_lazy(const json_t *tools, const tool_opts *o,
                       const char *format, nucleus_grammar **out,
                       const char **trigger) {
  *out = NULL;
  *trigger = NULL;
  /* where each format's forced grammar starts */
  const char *opener = !strcmp(format, "harmony")  ? "<|channel|>commentary to="
                       : !strcmp(format, "gemma4") ? "<|tool_call>"
                                                   : NULL;
  for (size_t i = 0; !opener && i < sizeof SYNTAX / sizeof SYNTAX[0]; i++)
    if (!strcmp(SYNTAX[i].name, format)) opener = SYNTAX[i].trigger;
  if (!opener) return;
  tool_opts any = *o;
  any.choice = TOOL_CHOICE_REQUIRED; /* any tool; as many as required's */
  api_error e;
  if (tool_grammar_build(tools, &any, format, out, &e)) return;
  *trigger = opener;
}
