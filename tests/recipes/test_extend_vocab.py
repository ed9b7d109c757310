"""recipes.extend_vocab as a user runs it: a Hugging Face pre-training checkpoint in, a loadable one out."""

import os

from keras_bert.checkpoints import detect_format, find_vocab_file
from keras_bert.tasks.pretraining.model import load_pretrainer
from keras_bert.text.vocab import load_vocab
from tests.recipes.conftest import run_recipe
from tests.tasks.test_extend_vocab import DOMAIN, write_tiny_checkpoint


def test_extend_vocab_writes_a_loadable_checkpoint(tmp_path):
    old_path, old_vocab = write_tiny_checkpoint(tmp_path, "huggingface")
    (tmp_path / "domain").mkdir()
    for index in range(2):
        (tmp_path / "domain" / f"part{index}.txt").write_text("\n".join(DOMAIN) + "\n")
    out = tmp_path / "extended"
    result = run_recipe("extend_vocab", f"--init_checkpoint={old_path}",
                        f"--input_files={tmp_path}/domain/*.txt", "--num_new_tokens=3", f"--output_dir={out}")
    expected = f"Added 3 tokens (2 in [unusedK] slots), vocab {len(old_vocab)} -> {len(old_vocab) + 1}"
    assert expected in result.stdout
    assert detect_format(str(out)) == "huggingface"
    vocab = load_vocab(find_vocab_file(str(out)))
    assert len(vocab) == len(old_vocab) + 1 and vocab[:1] == old_vocab[:1]
    pretrainer = load_pretrainer(str(out))
    assert pretrainer.encoder.config.vocab_size == len(vocab)
    assert tuple(pretrainer.masked_lm.output_bias.shape) == (len(vocab),)
    assert os.path.isfile(out / "config.json")
