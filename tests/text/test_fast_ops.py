"""The ids of a LiteRT export's tokenizer (tf-text's FastBertNormalizer + FastWordpieceTokenizer,
`keras_bert.export.litert_text`) against Google's original on the parity corpus: equal on every line of
printable ASCII, different only on the characters docs/litert.md lists; and the .tflite of those ops gives the
ids they give in TensorFlow."""

import numpy as np
import tensorflow as tf

from keras_bert.export.litert_text import FastOpsTokenizer
from keras_bert.text.vocab import load_vocab
from tests.text.tokenization_reference import OriginalFullTokenizer


def test_fast_ops_ids_on_the_parity_corpus(corpus_lines, uncased_vocab_file):
    lines = corpus_lines[::10]
    reference = OriginalFullTokenizer(load_vocab(uncased_vocab_file), lower_case=True)
    want = [reference.tokenize(line) for line in lines]
    got = FastOpsTokenizer(uncased_vocab_file, lower_case=True)(tf.constant(lines)).to_list()
    ascii_rows = [i for i, line in enumerate(lines) if line.isascii() and line.isprintable()]
    assert len(ascii_rows) > 400
    assert all(got[i] == want[i] for i in ascii_rows)
    differ = [i for i in range(len(lines)) if got[i] != want[i]]
    # (measured 2026-12-05: 13% of all corpus lines, the corpus being chosen for odd characters)
    assert 0.05 * len(lines) < len(differ) < 0.2 * len(lines)
    listed = {chr(c) for c in range(0x80)} - set(" \t\n\r") - {chr(c) for c in range(0x20, 0x7f)}
    # Each line that differs holds a control character or a character beyond ASCII.
    assert all(set(lines[i]) & listed or not lines[i].isascii() for i in differ)


def test_the_tflite_tokenizer_gives_the_ids_of_the_tf_ops(corpus_lines, uncased_vocab_file):
    """The same ops run by LiteRT's runtime (their tf-text LiteRT kernels) on a sample of the corpus."""
    from keras_bert.export.litert import _interpreter, saved_model_converter

    tokenizer = FastOpsTokenizer(uncased_vocab_file, lower_case=True)
    function = tf.function(lambda inputs: {"ids": tokenizer(inputs["text"]).to_tensor(-1)},
                           input_signature=[{"text": tf.TensorSpec([None], tf.string, name="text")}])
    with saved_model_converter(function) as converter:
        converter.allow_custom_ops = True
        runner = _interpreter(model_content=converter.convert()).get_signature_runner()
    lines = corpus_lines[3::40]
    ids = runner(text=np.array([line.encode() for line in lines], dtype=object))["ids"]
    want = tokenizer(tf.constant(lines)).to_list()
    assert [[i for i in row if i >= 0] for row in ids.tolist()] == want
    assert sum(map(len, want)) > 10_000
