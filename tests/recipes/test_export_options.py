"""export_saved_model.py passes the serve options the recipes' prediction files use: --word_tags serves a
token classifier's per-word tags (as eager `serve`), --nbest on a model without n-best lists is one error; a
sentence-transformers directory's pooling is the default, --pooling=none turns it off."""

import os

import numpy as np
import tensorflow as tf

from keras_bert import BertEncoder, BertTokenClassifier
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.models.test_sentence_pooling import write_sentence_transformers_dir

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "fox", "dog", "."]


def _tagger(tmp_path, tiny_config):
    (tmp_path / "vocab.txt").write_text("\n".join(WORDS + [f"[unused{i}]" for i in range(50)]) + "\n")
    preprocessor = BertPreprocessor(BertTokenizer(str(tmp_path / "vocab.txt"), lower_case=True), 16)
    model = BertTokenClassifier(BertEncoder(tiny_config), labels=["O", "B-X", "I-X"],
                                preprocessor=preprocessor)
    path = tmp_path / "tagger.keras"
    model.save(path)
    return model, str(path)


def test_word_tags_flag_serves_word_tags(run_in_process, tiny_config, tmp_path):
    model, path = _tagger(tmp_path, tiny_config)
    status, stderr = run_in_process("export.export_saved_model", f"--model_path={path}",
                                    f"--export_dir={tmp_path / 'served'}", "--word_tags", "--stride=4",
                                    "--nocheck", "--nowarmup")
    assert not status, stderr
    texts = ["the quick fox . the dog", "dog dog the fox quick . the the the fox"]
    served = tf.saved_model.load(os.path.join(tmp_path / "served", "1")).signatures["serving_default"](
        text=tf.constant(texts))
    eager = model.serve({"text": texts}, stride=4, word_tags=True)
    assert served["word_count"].numpy().tolist() == [6, 10]
    for name in ("word_tag", "word_tag_id", "word_start", "word_end", "entity_text"):
        np.testing.assert_array_equal(served[name].numpy(), eager[name], err_msg=name)
    np.testing.assert_allclose(served["word_logits"].numpy(), eager["word_logits"], atol=1e-5)


def test_nbest_flag_on_a_token_classifier_is_refused(run_in_process, tiny_config, tmp_path):
    _, path = _tagger(tmp_path, tiny_config)
    status, stderr = run_in_process("export.export_saved_model", f"--model_path={path}",
                                    f"--export_dir={tmp_path / 'served'}", "--nbest", "--nocheck")
    assert status == 1
    assert ("nbest=True applies to a span labeler served on 'question_context'; this is a "
            "BertTokenClassifier" in stderr)
    assert not (tmp_path / "served" / "1").exists()


def test_a_sentence_transformers_directory_exports_its_pooling(run_in_process, tiny_config, tmp_path):
    directory, _ = write_sentence_transformers_dir(tmp_path, tiny_config, "pooling_mode_mean_tokens")
    texts = ["the quick fox", "", "dog dog the fox quick . the the the fox"]
    exported = {}
    for name, flags in (("own", []), ("off", ["--pooling=none"])):
        status, stderr = run_in_process("export.export_saved_model", f"--model_path={directory}",
                                        f"--export_dir={tmp_path / name}", "--max_seq_length=16", "--nocheck",
                                        "--nowarmup", *flags)
        assert not status, stderr
        serving = tf.saved_model.load(os.path.join(tmp_path / name, "1")).signatures["serving_default"]
        exported[name] = serving(text=tf.constant(texts))
    want = BertEncoder.from_pretrained(directory, seq_length=16).serve({"text": texts}, pooling="mean",
                                                                        normalize=True)
    np.testing.assert_allclose(exported["own"]["sentence_embedding"].numpy(), want["sentence_embedding"],
                               atol=1e-5)  # modules.json read where the checkpoint enters, not by the script
    assert "sentence_embedding" not in exported["off"]
