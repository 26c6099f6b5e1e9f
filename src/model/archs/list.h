/* list: the architectures nucleus runs, the one place one is registered.
 * An architecture is its file arch_<name>.c, defining the nc_arch
 * nc_arch_<id> (arch.h) with every fact about it, and one X(<id>) line
 * here; the declarations (arch.h), the lookup by general.architecture
 * (list.c), nucleus_arch_name, /model_info's architectures, the built-in
 * chat template and the test reference all follow from the list and the
 * entries. The order is nucleus_arch_name's (and the "supported
 * architectures" line of `nucleus info` and of the load error). */
#ifndef NC_ARCH_LIST_H
#define NC_ARCH_LIST_H

#define NC_ARCH_LIST(X)                                                        \
  X(llama)                                                                     \
  X(qwen2)                                                                     \
  X(qwen3)                                                                     \
  X(phi3)                                                                      \
  X(qwen3moe)                                                                  \
  X(gemma2)                                                                    \
  X(gemma3)                                                                    \
  X(gpt_oss)                                                                   \
  X(gemma4)                                                                    \
  X(qwen35)                                                                    \
  X(gemma_embedding)                                                           \
  X(qwen35moe)                                                                 \
  X(bert)                                                                      \
  X(nomic_bert)                                                                \
  X(qwen2vl)                                                                   \
  X(qwen3vl)                                                                   \
  X(qwen3vlmoe)                                                                \
  X(qwen3next)

#endif
