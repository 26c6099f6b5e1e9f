/* The list of architectures (src/model/archs/list.h): every entry is
 * complete (the facts other modules read are there and name things that
 * exist: a chat template, a test reference for its family), names are
 * unique, and the lookups and the public API agree with the list. A new
 * architecture is checked here without editing this file
 * (docs/ADDING_AN_ARCH.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../reference/forward_ref.h"
#include "chat/chat_template_builtin.h"
#include "kernels/ops.h"
#include "model/arch.h"
#include "nucleus.h"

static bool nonempty(const char *s) {
  return s && *s;
}

/* A Hugging Face class name: an identifier that starts upper case and
 * says what it is for ("LlamaForCausalLM"). */
/* A Hugging Face class: XForY (a model with a head), or an encoder's
 * XModel (Gemma3TextModel, BertModel). */
static bool hf_like(const char *s) {
  const size_t n = s ? strlen(s) : 0;
  if (!nonempty(s) || !(*s >= 'A' && *s <= 'Z') ||
      !(strstr(s, "For") || (n > 5 && strcmp(s + n - 5, "Model") == 0)))
    return false;
  for (; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
          (*s >= '0' && *s <= '9') || *s == '_'))
      return false;
  return true;
}

static void test_entries_complete(void **state) {
  (void)state;
  const size_t n = nc_arch_count();
  assert_true(n >= 7);
  for (size_t i = 0; i < n; i++) {
    const nc_arch *a = nc_arch_at(i);
    assert_non_null(a);
    print_message("%-10s %-20s %-20s family %-6s template %s\n", a->name,
                  a->hf_class, a->hf_class_moe ? a->hf_class_moe : "-",
                  a->family, a->chat_template ? a->chat_template : "(vocab)");
    /* general.architecture: short enough for the model's copy of it */
    assert_true(nonempty(a->name));
    assert_true(strlen(a->name) < 32);
    assert_true(hf_like(a->hf_class));
    assert_true(!a->hf_class_moe || hf_like(a->hf_class_moe));
    /* the forward: its functions, its RoPE, its scratch bits */
    assert_non_null(a->load_weights);
    assert_non_null(a->forward);
    assert_true(a->rope_type == NC_ROPE_NORMAL || a->rope_type == NC_ROPE_NEOX);
    assert_int_equal(
        a->scratch & ~(unsigned)(NC_SCRATCH_SWA_ROPE | NC_SCRATCH_SIDE |
                                 NC_SCRATCH_RECURRENT | NC_SCRATCH_SSM_PACKED),
        0);
    /* the packed DeltaNet projections are sorted into the recurrent ones */
    assert_true(!(a->scratch & NC_SCRATCH_SSM_PACKED) ||
                (a->scratch & NC_SCRATCH_RECURRENT));
    /* its family has a test reference */
    assert_true(nonempty(a->family));
    const nc_ref_family *ref = nc_ref_family_find(a->family);
    assert_non_null(ref);
    assert_non_null(ref->forward);
    /* its chat template, if named, is a built-in one */
    if (a->chat_template) {
      const nc_builtin_template *t =
          nc_chat_template_builtin(a->chat_template, NULL);
      assert_non_null(t);
      assert_string_equal(t->name, a->chat_template);
    }
  }
  assert_null(nc_arch_at(n));
}

static void test_names_unique(void **state) {
  (void)state;
  const size_t n = nc_arch_count();
  for (size_t i = 0; i < n; i++) {
    const nc_arch *a = nc_arch_at(i);
    for (size_t j = 0; j < i; j++) {
      const nc_arch *b = nc_arch_at(j);
      assert_string_not_equal(a->name, b->name);
      /* one class names one architecture (and its files with experts) */
      assert_string_not_equal(a->hf_class, b->hf_class);
      assert_false(a->hf_class_moe && b->hf_class_moe &&
                   !strcmp(a->hf_class_moe, b->hf_class_moe));
      assert_false(a->hf_class_moe && !strcmp(a->hf_class_moe, b->hf_class));
      assert_false(b->hf_class_moe && !strcmp(b->hf_class_moe, a->hf_class));
    }
  }
}

static void test_lookups_follow_list(void **state) {
  (void)state;
  const size_t n = nc_arch_count();
  assert_int_equal(nucleus_arch_count(), n);
  for (size_t i = 0; i < n; i++) {
    const nc_arch *a = nc_arch_at(i);
    assert_ptr_equal(nc_arch_find(a->name, strlen(a->name)), a);
    assert_string_equal(nucleus_arch_name(i), a->name);
    /* a prefix is not the name (it may be another's: qwen3, qwen35) */
    const nc_arch *p = nc_arch_find(a->name, strlen(a->name) - 1);
    assert_true(p != a);
    assert_true(!p || strlen(p->name) == strlen(a->name) - 1);
  }
  assert_null(nucleus_arch_name(n));
  assert_null(nc_arch_find("nonesuch", 8));
  assert_null(nc_arch_hf_class(NULL, NULL));
  assert_null(nucleus_model_hf_architecture(NULL));
}

/* hf_class_moe applies to files with experts only */
static void test_hf_class_of_files(void **state) {
  (void)state;
  const nc_arch *llama = nc_arch_find("llama", 5);
  assert_non_null(llama);
  nc_hparams hp;
  memset(&hp, 0, sizeof hp);
  assert_string_equal(nc_arch_hf_class(llama, &hp), "LlamaForCausalLM");
  hp.n_expert = 8;
  assert_string_equal(nc_arch_hf_class(llama, &hp), "MixtralForCausalLM");
  for (size_t i = 0; i < nc_arch_count(); i++) {
    const nc_arch *a = nc_arch_at(i);
    const char *want = a->hf_class_moe ? a->hf_class_moe : a->hf_class;
    assert_string_equal(nc_arch_hf_class(a, &hp), want);
  }
}

/* The built-in chat template: the one an entry names, else the
 * vocabulary's (none here) */
static void test_builtin_template_by_name(void **state) {
  (void)state;
  static const char *const NAMES[] = {"gemma", "gemma4", "chatml", "llama3"};
  for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
    const nc_builtin_template *t = nc_chat_template_builtin(NAMES[i], NULL);
    assert_non_null(t);
    assert_string_equal(t->name, NAMES[i]);
    assert_true(nonempty(t->text));
  }
  assert_null(nc_chat_template_builtin(NULL, NULL));
  assert_null(nc_chat_template_builtin("gemma2", NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_entries_complete),
      cmocka_unit_test(test_names_unique),
      cmocka_unit_test(test_lookups_follow_list),
      cmocka_unit_test(test_hf_class_of_files),
      cmocka_unit_test(test_builtin_template_by_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
