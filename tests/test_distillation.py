"""keras_bert.distillation on tiny models: the student's build and layer copy, the refusals, and a few
steps of `TaskDistiller.fit` (eager: no tracing) that move the student toward a frozen teacher."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import distillation
from keras_bert.config import BertConfig
from keras_bert.distillation import TaskDistiller, check_student, distillation_dataset, make_student
from keras_bert.models.encoder import BertEncoder
from keras_bert.tasks.classification.model import BertClassifier
from keras_bert.tasks.ner.model import BertTokenClassifier
from keras_bert.tasks.squad.model import BertSpanLabeler
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.harness import assert_same_outputs

WORDS = "the a cat dog sat ran on mat fast slow red blue big small good bad day night".split()
TEXTS = ["the cat sat on the mat", "a dog ran fast", "the red mat", "a big good day", "the slow blue dog",
         "a small bad night", "the cat ran", "a dog sat on a mat"]
LABELS = ["pos", "neg", "pos", "pos", "neg", "neg", "pos", "neg"]


def _preprocessor(tmp_path, seq_length=16, extra=()):
    path = tmp_path / f"vocab{len(extra)}.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *extra]) + "\n")
    return BertPreprocessor(BertTokenizer(str(path), lower_case=True), seq_length=seq_length)


def _config(vocab_size, layers=4, hidden=32):
    return BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                      num_attention_heads=4, intermediate_size=2 * hidden, max_position_embeddings=32)


def _teacher(tmp_path, make=lambda encoder, pre: BertClassifier(encoder, labels=["neg", "pos"],
                                                                  preprocessor=pre)):
    """A random 4-layer teacher whose head is scaled up, so its outputs are far from uniform."""
    preprocessor = _preprocessor(tmp_path)
    teacher = make(BertEncoder(_config(preprocessor.tokenizer.vocab_size)), preprocessor)
    for layer in teacher.layers:
        if layer is not teacher.encoder and layer.weights:
            layer.set_weights([w * 60 for w in layer.get_weights()])
    return teacher


def test_spread_layers():
    assert distillation.spread_layers(12, 6) == [0, 2, 4, 7, 9, 11]  # DistilBERT's
    assert distillation.spread_layers(6, 2) == [0, 5]
    assert distillation.spread_layers(4, 4) == [0, 1, 2, 3]
    assert distillation.spread_layers(3, 1) == [0]
    with pytest.raises(ValueError, match=r"^student_layers=5; expected 1 <= student_layers <= the "
                                         r"teacher's 4 layers$"):
        distillation.spread_layers(4, 5)


def test_student_copies_spread_layers_and_keeps_the_teacher_s_text(tmp_path):
    teacher = _teacher(tmp_path)
    student = make_student(teacher, layers=2)
    assert type(student) is BertClassifier and student.encoder.config.num_hidden_layers == 2
    assert student.labels == ["neg", "pos"] and student.preprocessor.seq_length == 16
    assert student.preprocessor.tokenizer.vocab == teacher.preprocessor.tokenizer.vocab
    source, target = teacher.encoder, student.encoder
    for i, j in enumerate([0, 3]):  # student layer i is teacher layer j
        assert_same_outputs(target.transformer_layers[i].get_weights(),
                            source.transformer_layers[j].get_weights())
    for name in ("embeddings", "pooler"):
        assert_same_outputs(getattr(target, name).get_weights(), getattr(source, name).get_weights())
    assert_same_outputs(student.get_layer("classifier").get_weights(),
                        teacher.get_layer("classifier").get_weights())
    assert student.count_params() < teacher.count_params()
    # A 1-layer student of a smaller preset-like config: fresh weights, the teacher's vocab size.
    small = make_student(teacher, config=_config(teacher.encoder.config.vocab_size, layers=1, hidden=16))
    assert small.encoder.config.hidden_size == 16 and small.labels == teacher.labels


def test_a_student_of_another_vocab_or_sequence_length_is_refused(tmp_path):
    teacher = _teacher(tmp_path)
    student = make_student(teacher, layers=1)
    other_vocab = _preprocessor(tmp_path, extra=("zebra",))
    student.preprocessor = other_vocab
    with pytest.raises(ValueError, match=r"^the student's vocab is not the teacher's: the vocab .* has 24 "
                                         r"tokens but the model was trained with 23"):
        check_student(teacher, student)
    student.preprocessor = _preprocessor(tmp_path, seq_length=12)
    with pytest.raises(ValueError, match=r"^the student packs seq_length=12 but the teacher seq_length=16"):
        TaskDistiller(teacher, student)
    bigger = BertClassifier(BertEncoder(_config(24, layers=1)), labels=["neg", "pos"],
                            preprocessor=other_vocab)
    with pytest.raises(ValueError, match=r"^the student's vocab is not the teacher's: the model has "
                                         r"vocab_size=24 but the vocab file of the teacher .* has 23 tokens"):
        check_student(teacher, bigger)
    with pytest.raises(ValueError, match=r"^the student has labels=\['a', 'b'\] but the teacher "):
        check_student(teacher, BertClassifier(BertEncoder(_config(23, layers=1)), labels=["a", "b"],
                                              preprocessor=teacher.preprocessor))
    with pytest.raises(ValueError, match=r"^student_layers=5; expected 1 <= student_layers <= the "):
        make_student(teacher, layers=5)


def _kl(teacher, student, data):
    """Mean KL(teacher || student) of the output softmax over `data`'s batches (the real tokens)."""
    values = []
    for inputs, *_ in data:
        p = tf.nest.flatten(teacher(inputs, training=False))
        q = tf.nest.flatten(student(inputs, training=False))
        for a, b in zip(p, q, strict=True):
            kl = keras.losses.KLDivergence(reduction=None)(tf.nn.softmax(a), tf.nn.softmax(b))
            if kl.shape.rank == 2:
                kl = tf.boolean_mask(kl, inputs["input_mask"] > 0)
            values.append(float(tf.reduce_mean(kl)))
    return float(np.mean(values))


TASKS = {
    "classifier": (lambda encoder, pre: BertClassifier(encoder, labels=["neg", "pos"], preprocessor=pre),
                   lambda rng: np.array([["neg", "pos"].index(label) for label in LABELS], "int32")),
    "span_labeler": (lambda encoder, pre: BertSpanLabeler(encoder, preprocessor=pre),
                     lambda rng: {"start_logits": rng.integers(1, 4, 8),
                                  "end_logits": rng.integers(1, 4, 8)}),
    "token_classifier": (lambda encoder, pre: BertTokenClassifier(encoder, num_classes=3, preprocessor=pre),
                         lambda rng: rng.integers(0, 3, (8, 16)).astype("int32")),
}


@pytest.mark.parametrize("task", sorted(TASKS))
def test_distilling_moves_the_student_toward_a_frozen_teacher(tmp_path, task):
    make, labels = TASKS[task]
    teacher = _teacher(tmp_path, make)
    student = make_student(teacher, config=_config(teacher.encoder.config.vocab_size, layers=1, hidden=16))
    inputs = teacher.preprocessor(tf.constant(TEXTS))
    labeled = tf.data.Dataset.from_tensor_slices((dict(inputs), labels(np.random.default_rng(0)))).batch(8)
    more = dict(teacher.preprocessor(tf.constant(TEXTS[:4])))
    unlabeled = tf.data.Dataset.from_tensor_slices(more).batch(4)
    data = distillation_dataset(teacher, labeled, unlabeled=unlabeled, seed=1)
    assert int(data.cardinality()) == 2
    frozen = [w.copy() for w in teacher.get_weights()]
    before = _kl(teacher, student, labeled)
    distiller = TaskDistiller(teacher, student, temperature=2.0, alpha=0.2, hidden_weight=1.0)
    distiller.compile(optimizer=keras.optimizers.Adam(1e-2), run_eagerly=True)  # 4 tiny steps: no tracing
    history = distiller.fit(data, epochs=2, verbose=0).history
    assert history["distillation_loss"][-1] < history["distillation_loss"][0]
    assert _kl(teacher, student, labeled) < before
    assert_same_outputs(teacher.get_weights(), frozen)


def test_unlabeled_rows_carry_no_gold_loss_and_a_narrower_student_projects(tmp_path):
    teacher = _teacher(tmp_path)
    student = make_student(teacher, config=_config(teacher.encoder.config.vocab_size, layers=2, hidden=16))
    distiller = TaskDistiller(teacher, student, alpha=1.0, hidden_weight=0.5)
    distiller.compile(jit_compile=False)
    inputs = dict(teacher.preprocessor(tf.constant(TEXTS[:2])))
    loss = distiller.compute_loss(inputs, tf.constant([0, 1]), sample_weight=tf.zeros([2]), training=False)
    assert float(loss) == 0.0  # alpha=1: gold labels only, and these rows have none
    assert len(distiller.projections) == 2  # 16 -> 32 wide, one per student layer, trained with it
    names = {v.path for v in distiller.trainable_variables}
    assert {"projection_0/kernel", "projection_1/kernel"} <= names
    assert not {id(v) for v in teacher.weights} & {id(v) for v in distiller.trainable_variables}


def test_raw_text_data_with_unlabeled_rows_of_zero_weight(tmp_path):
    teacher = _teacher(tmp_path)
    data = distillation_dataset(teacher, TEXTS, LABELS, unlabeled=TEXTS[:3], batch_size=4, shuffle=False)
    batches = list(data)
    assert len(batches) == 3 and [int(b[0]["input_word_ids"].shape[0]) for b in batches] == [4, 4, 3]
    assert [b[2].numpy().tolist() for b in batches] == [[1.0] * 4, [1.0] * 4, [0.0] * 3]
    assert batches[0][1].numpy().tolist() == [1, 0, 1, 1] and batches[2][1].numpy().tolist() == [0, 0, 0]
    np.testing.assert_array_equal(batches[2][0]["input_word_ids"], teacher.preprocessor(
        tf.constant(TEXTS[:3]))["input_word_ids"])


def test_fit_traces_its_step_once(tmp_path):
    """The optimizer's slots are made before the first trace (`OptimizerBuiltFirst`): one trace of the step
    (made inside it, as Keras does outside a strategy's scope, the step traces twice)."""
    teacher = _teacher(tmp_path)
    distiller = TaskDistiller(teacher, make_student(teacher, layers=1))
    distiller.compile(jit_compile=False)
    traces, train_step = [], distiller.train_step
    distiller.train_step = lambda data: traces.append(1) or train_step(data)
    distiller.fit(distillation_dataset(teacher, TEXTS, LABELS, batch_size=4), epochs=1, verbose=0)
    assert len(traces) == 1


def test_a_masked_word_reaches_the_model_as_the_mask_id(tmp_path):
    preprocessor = _preprocessor(tmp_path, extra=("[", "]", "mask"))  # a vocab that spells "[MASK]"
    tokenizer = preprocessor.tokenizer
    teacher = BertClassifier(BertEncoder(_config(tokenizer.vocab_size)), labels=["neg", "pos"],
                             preprocessor=preprocessor)
    texts = distillation.augment_texts(TEXTS[1:3], 1, mask_prob=1.0, swap_prob=0.0, ngram_prob=0.0)
    assert texts == ["[MASK] [MASK] [MASK] [MASK]", "[MASK] [MASK] [MASK]"]  # was: 3 pieces each, no mask id
    rows = distillation_dataset(teacher, TEXTS[:2], LABELS[:2], unlabeled=texts + [TEXTS[0] + " [MASK]"],
                                batch_size=4, shuffle=False)
    inputs = list(rows)[1][0]
    for row, count in zip(inputs["input_word_ids"].numpy()[:2], (4, 3), strict=True):
        assert row.tolist()[:count + 3] == [tokenizer.cls_id, *[tokenizer.mask_id] * count,
                                            tokenizer.sep_id, 0]
    original = preprocessor(tf.constant(TEXTS[:1]))["input_word_ids"][0].numpy()
    length = int(np.sum(original > 0))  # real text then one masked word: the gap closed, padded after
    assert inputs["input_word_ids"][2].numpy().tolist()[:length + 2] == [
        *original[:length - 1], tokenizer.mask_id, tokenizer.sep_id, 0]
    assert int(inputs["input_mask"][2].numpy().sum()) == length + 1


def test_replicas_each_return_their_share_of_the_global_loss(tmp_path):
    teacher = _teacher(tmp_path)
    student = make_student(teacher, config=_config(teacher.encoder.config.vocab_size, layers=1, hidden=16))
    inputs = dict(teacher.preprocessor(tf.constant(TEXTS[:4])))
    labels, weights = tf.constant([0, 1, 1, 0]), tf.ones([4])
    distiller = TaskDistiller(teacher, student)  # (a hidden-state term's token means differ per replica)
    distiller.compile(jit_compile=False)
    whole = float(distiller.compute_loss(inputs, labels, sample_weight=weights, training=False))
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    halves = strategy.experimental_distribute_values_from_function(
        lambda context: tf.nest.map_structure(lambda t: t[2 * context.replica_id_in_sync_group:][:2],
                                              (inputs, labels, weights)))
    shares = strategy.run(lambda x, y, w: distiller.compute_loss(x, y, sample_weight=w, training=False),
                          args=halves)
    # Summed over the replicas (as their gradients are), the whole batch's loss.
    total = sum(float(v) for v in strategy.experimental_local_results(shares))
    assert total == pytest.approx(whole, rel=1e-5)


def test_augment_texts_is_deterministic_and_masks_swaps_and_cuts_at_the_given_rates():
    texts = [" ".join(WORDS)] * 50  # 18 words each
    out = distillation.augment_texts(texts, 2, seed=3, mask_prob=0.2, swap_prob=0.0, ngram_prob=0.0)
    assert out == distillation.augment_texts(texts, 2, seed=3, mask_prob=0.2, swap_prob=0.0, ngram_prob=0.0)
    assert out != distillation.augment_texts(texts, 2, seed=4, mask_prob=0.2, swap_prob=0.0, ngram_prob=0.0)
    assert len(out) == 100
    words = [word for text in out for word in text.split()]
    assert len(words) == 100 * 18 and 0.15 < words.count("[MASK]") / len(words) < 0.25
    swapped = distillation.augment_texts(texts, 1, seed=0, mask_prob=0.0, swap_prob=1.0, ngram_prob=0.0,
                                         words=["zebra"])
    assert swapped == ["zebra " * 17 + "zebra"] * 50
    cut = distillation.augment_texts(texts, 1, seed=0, mask_prob=0.0, swap_prob=0.0, ngram_prob=1.0)
    assert all(1 <= len(text.split()) <= 5 and text in texts[0] for text in cut)
    with pytest.raises(ValueError, match="mask_prob=0.8, swap_prob=0.5"):
        distillation.augment_texts(texts, 1, mask_prob=0.8, swap_prob=0.5)
