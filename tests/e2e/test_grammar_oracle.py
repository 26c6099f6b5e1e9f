"""Exact masks: the grammar engine's token masks against llguidance's (an
independent implementation) on the default model's vocabulary, over random
reachable states (random walks through llguidance's own masks) of several
GBNF grammars. Every token llguidance's mask allows we allow; every token
we allow that its mask drops (it also drops non-canonical splits of forced
bytes) its parser accepts; and 600 random tokens we block per state its
parser refuses. End-of-sequence is allowed in both exactly where the output
is complete. Our masks come from build/release/tests/grammar_mask_dump."""

import os
import pathlib
import random
import subprocess

import pytest

import llama_cpp  # requirements-test.txt: a missing oracle fails
import llguidance

from conftest import DEFAULT_MODEL, ROOT, require_binary_and_model  # noqa

DUMP = pathlib.Path(os.environ.get(
    "NUCLEUS_GRAMMAR_DUMP", ROOT / "build/release/tests/grammar_mask_dump"))

GRAMMARS = {
    "json": r'''root ::= object
value ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ( string ":" value ( "," string ":" value )* )? "}"
array ::= "[" ( value ( "," value )* )? "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )?
''',
    "choice": 'root ::= ("yes" | "no" | "maybe so") "."\n',
    "words": 'root ::= [A-Z] [a-z]{2,8} (" " [a-z]{1,8}){0,4} "."\n',
    "person": 'root ::= "{\\"name\\": \\"" [A-Za-z ]{1,12} "\\", \\"age\\": " [1-9] [0-9]? "}"\n',
    "unicode": 'root ::= "<" [^<>\u00e0-\u00ff]{0,6} ">" [\u4e00-\u9fff]? "!"\n',
    "list": 'root ::= "- " item ("\\n- " item){0,3}\nitem ::= [a-z]+ (" " [0-9]+)?\n',
}


@pytest.fixture(scope="module")
def lltok():
    require_binary_and_model()
    if not DUMP.exists():
        pytest.fail(f"{DUMP} is not built (make)")
    llama_cpp.llama_backend_init()
    mp = llama_cpp.llama_model_default_params()
    mp.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(DEFAULT_MODEL.encode(), mp)
    vocab = llama_cpp.llama_model_get_vocab(model)
    from llguidance.llamacpp import lltokenizer_from_vocab
    tok = lltokenizer_from_vocab(vocab)
    eog = [t for t in range(llama_cpp.llama_vocab_n_tokens(vocab))
           if llama_cpp.llama_vocab_is_eog(vocab, t)]
    yield tok, eog
    llama_cpp.llama_model_free(model)


def allowed_ll(m, n_vocab):
    bits = m.compute_bitmask()
    return {i for i in range(n_vocab) if bits[i // 8] >> (i % 8) & 1}


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_masks_match_llguidance(lltok, name, tmp_path):
    tok, eog = lltok
    gbnf = GRAMMARS[name]
    gfile = tmp_path / "g.gbnf"
    gfile.write_text(gbnf)
    ours = subprocess.Popen([str(DUMP), DEFAULT_MODEL, str(gfile)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    grammar = llguidance.grammar_from("gbnf", gbnf)
    rng = random.Random(name)
    states = 0
    try:
        for walk in range(4):
            m = llguidance.LLMatcher(tok, grammar)
            assert not m.is_error(), m.get_error()
            prefix = []
            for step in range(12):
                theirs = allowed_ll(m, tok.vocab_size)
                ours.stdin.write(" ".join(map(str, prefix)) + "\n")
                ours.stdin.flush()
                line = ours.stdout.readline().split()
                assert line and line[0] not in ("x", "error"), line
                mine = set(map(int, line))
                # The end: ours allows every end-of-generation token,
                # llguidance its one EOS; compare "the end is allowed".
                end_mine = bool(mine & set(eog))
                end_theirs = bool(theirs & set(eog))
                assert end_mine == end_theirs, (prefix, end_mine)
                mine -= set(eog)
                theirs -= set(eog)
                # llguidance's mask also drops non-canonical splits of
                # forced bytes ("e" when "es" is forced), which its own
                # consume accepts: the mask is a subset of the viable set.
                assert theirs <= mine, (name, prefix,
                                        sorted(theirs - mine)[:10])
                for t in mine - theirs:  # viable by llguidance's parser
                    assert m.validate_tokens([t]) == 1, (name, prefix, t)
                blocked = [t for t in rng.sample(range(tok.vocab_size), 600)
                           if t not in mine and t not in eog]
                for t in blocked:  # and what we block, it refuses
                    assert m.validate_tokens([t]) == 0, (name, prefix, t)
                states += 1
                if not theirs:
                    break
                t = rng.choice(sorted(theirs))
                assert m.consume_token(t), m.get_error()
                prefix.append(t)
    finally:
        ours.stdin.close()
        ours.wait(timeout=30)
    assert states >= 8
