"""build_vocab on a corpus too small for --vocab_size: the vocab it writes is smaller, and a warning says so
(the keras_bert logger's, which a user's run prints to stderr)."""

import logging

from keras_bert.text.vocab import load_vocab

CORPUS = "Hello World, HELLO tokenizer!\nA cased vocab keeps Case.\n" * 30


def test_a_vocab_smaller_than_asked_is_warned_of(tmp_path, run_in_process, caplog):
    caplog.set_level(logging.WARNING, logger="keras_bert")
    (tmp_path / "corpus.txt").write_text(CORPUS, encoding="utf-8")
    output = tmp_path / "vocab.txt"
    status, stderr = run_in_process("build_vocab", f"--input_files={tmp_path}/corpus.txt",
                                    f"--output_file={output}", "--vocab_size=200", "--nodo_lower_case")
    assert status is None, stderr  # main returned
    size = len(load_vocab(output))
    assert 60 < size < 200
    # Was: nothing said.
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [f"the corpus yields {size} tokens, fewer than vocab_size=200: no pair of pieces left "
                      "occurs min_frequency=2 times (a larger corpus or a lower min_frequency gives more)"]
    caplog.clear()
    status, stderr = run_in_process("build_vocab", f"--input_files={tmp_path}/corpus.txt",
                                    f"--output_file={output}", f"--vocab_size={size}", "--nodo_lower_case",
                                    "--overwrite")
    assert status is None and not caplog.records, stderr
    assert len(load_vocab(output)) == size
