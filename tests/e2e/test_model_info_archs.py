"""GET /model_info on every architecture: `model_type` is the file's
general.architecture and `architectures` its Hugging Face class, which
comes from the architecture's own entry (nc_arch.hf_class in
src/model/archs/arch_<name>.c), not from a table in the server. The files:
the default model (llama) and the random-weight files of
scripts/make_arch_gguf.py (`make arch-models`). A new architecture adds
its file here; test_every_arch_is_covered fails until it does."""

import pathlib
import subprocess

import pytest
import requests

from conftest import DEFAULT_MODEL, NUCLEUS_BIN, require_binary_and_model

ROOT = pathlib.Path(__file__).resolve().parents[2]

# file -> (model_type, architectures)
EXPECTED = {
    "default": ("llama", ["LlamaForCausalLM"]),
    "mixtral": ("llama", ["MixtralForCausalLM"]),  # a llama file with experts
    "qwen2": ("qwen2", ["Qwen2ForCausalLM"]),
    "qwen3": ("qwen3", ["Qwen3ForCausalLM"]),
    "phi3": ("phi3", ["Phi3ForCausalLM"]),
    "qwen3moe": ("qwen3moe", ["Qwen3MoeForCausalLM"]),
    "gemma2": ("gemma2", ["Gemma2ForCausalLM"]),
    "gemma3": ("gemma3", ["Gemma3ForCausalLM"]),
    "gptoss": ("gpt-oss", ["GptOssForCausalLM"]),
    "gemma4": ("gemma4", ["Gemma4ForCausalLM"]),
    "gemma4moe": ("gemma4", ["Gemma4ForCausalLM"]),  # experts, same class
    "qwen35": ("qwen35", ["Qwen3_5ForCausalLM"]),
    # embedding models (issue 44): not generation models
    "gemmaemb": ("gemma-embedding", ["Gemma3TextModel"]),
    "qwen3emb": ("qwen3", ["Qwen3ForCausalLM"]),
    "qwen35moe": ("qwen35moe", ["Qwen3_5MoeForCausalLM"]),
    "bert": ("bert", ["BertModel"]),
    "nomicbert": ("nomic-bert", ["NomicBertModel"]),
    # the vision-language Qwens' language models (issue 46)
    "qwen2vl": ("qwen2vl", ["Qwen2VLForConditionalGeneration"]),
    "qwen3vl": ("qwen3vl", ["Qwen3VLForConditionalGeneration"]),
    "qwen3vlmoe": ("qwen3vlmoe", ["Qwen3VLMoeForConditionalGeneration"]),
    "qwen3next": ("qwen3next", ["Qwen3NextForCausalLM"]),
}
EMBEDDING = {"gemmaemb", "qwen3emb", "bert", "nomicbert"}


def path_of(name):
    if name == "default":
        return pathlib.Path(DEFAULT_MODEL)
    return ROOT / "build/arch" / f"{name}.gguf"


def test_every_arch_is_covered():
    require_binary_and_model()
    out = subprocess.run([NUCLEUS_BIN, "info", DEFAULT_MODEL],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    last = out.stdout.splitlines()[-1]
    assert last.startswith("supported architectures: ")
    supported = set(last.split(": ", 1)[1].split(", "))
    assert supported == {t for t, _ in EXPECTED.values()}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_model_info_reports_architectures(start_server, name):
    path = path_of(name)
    assert path.is_file(), f"{path} is missing: `make model arch-models`"
    server = start_server("-c", "256", "-t", "1", model=str(path))
    info = requests.get(server.url + "/model_info", timeout=10).json()
    model_type, architectures = EXPECTED[name]
    assert info["model_type"] == model_type
    assert info["architectures"] == architectures
    assert info["is_generation"] is (name not in EMBEDDING)
    # the fallback path answers the same
    again = requests.get(server.url + "/get_model_info", timeout=10).json()
    assert again["architectures"] == architectures
