"""`fit`'s default progress: one line per epoch where stdout is no terminal (a log), the live bar on one."""

import io

import keras

from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.text_task import fit_verbosity
from keras_bert.tasks.classification.model import BertClassifier
from keras_bert.text import BertPreprocessor, BertTokenizer


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_fit_writes_no_ansi_codes_to_a_log(tmp_path, capsys):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "movie"]))
    config = BertConfig(vocab_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16)
    clf = BertClassifier(BertEncoder(config), labels=["neg", "pos"],
                         preprocessor=BertPreprocessor(BertTokenizer(str(vocab)), seq_length=8))
    clf.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False)
    capsys.readouterr()
    clf.fit(["good movie", "bad movie"] * 4, ["pos", "neg"] * 4, batch_size=4, epochs=2)  # verbose="auto"
    out = capsys.readouterr().out
    assert "\x1b[" not in out and "\r" not in out, repr(out)  # was: the bar's ANSI codes, once per step
    assert [line.split(" - ")[0] for line in out.splitlines() if " - loss: " in line] == ["2/2", "2/2"]


def test_fit_keeps_the_live_bar_on_a_terminal(monkeypatch):
    assert fit_verbosity("auto") == 2  # pytest's captured stdout is no terminal
    monkeypatch.setattr("sys.stdout", _Terminal())
    assert fit_verbosity("auto") == 1
    assert fit_verbosity(0) == 0 and fit_verbosity(1) == 1
    monkeypatch.setattr("sys.stdout", None)
    assert fit_verbosity("auto") == 2
