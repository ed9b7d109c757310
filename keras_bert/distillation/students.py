"""Students of a fine-tuned task model: one of its class, head, labels and preprocessor on fewer of its layers
(DistilBERT's way), a smaller config, or a given encoder; and the check that a student can stand for its
teacher. `keras_bert.distillation` trains them."""

import keras
import numpy as np

from keras_bert.config import BertConfig
from keras_bert.models.float_form import quantization_config
from keras_bert.models.pretrained import check_agrees, check_seq_length, check_vocab_size


def spread_layers(num_teacher_layers, num_student_layers):
    """The teacher layers a student of `num_student_layers` stands for: evenly spread from the first to the
    last (12 -> 6: 0, 2, 4, 7, 9, 11, DistilBERT's choice; 6 -> 2: 0, 5)."""
    if not 1 <= num_student_layers <= num_teacher_layers:
        raise ValueError(f"student_layers={num_student_layers}; expected 1 <= student_layers <= the "
                         f"teacher's {num_teacher_layers} layers")
    return [int(i) for i in np.round(np.linspace(0, num_teacher_layers - 1, num_student_layers))]


def make_student(teacher, layers=None, config=None, encoder=None):
    """A student of `teacher`'s class, head, labels and preprocessor, on one of:

    Args:
        teacher: a fine-tuned task model (float: a quantized model is refused).
        layers: k: the teacher's encoder with k of its layers (`spread_layers`), initialised from them, the
            embeddings, pooler and head copied (as DistilBERT).
        config: a smaller `BertConfig` (or its dict, or a preset name of `keras_bert.config.PRESETS`):
            fresh weights; its vocab_size must be the teacher's (a preset takes it, and the teacher's
            max_position_embeddings, type_vocab_size and hidden_act).
        encoder: a `BertEncoder` (e.g. a pre-trained small BERT of the teacher's vocab), used as it is.
    """
    if sum(value is not None for value in (layers, config, encoder)) != 1:
        raise ValueError("make_student takes one of layers=, config= or encoder=")
    if quantization_config(teacher):
        raise ValueError(f"the teacher {teacher.name!r} is quantized: distil its float model "
                         "(keras_bert.models.float_form.float_model)")
    teacher_config = teacher.encoder.config
    mapping = None
    if layers is not None:
        mapping = spread_layers(teacher_config.num_hidden_layers, layers)
        config = BertConfig(**{**teacher_config.to_dict(), "num_hidden_layers": len(mapping)})
    elif isinstance(config, str):
        config = BertConfig.from_preset(config, vocab_size=teacher_config.vocab_size,
                                        max_position_embeddings=teacher_config.max_position_embeddings,
                                        type_vocab_size=teacher_config.type_vocab_size,
                                        hidden_act=teacher_config.hidden_act)
    elif isinstance(config, dict):
        config = BertConfig(**config)
    if encoder is None:
        encoder_config = dict(teacher.encoder.get_config(), config=config.to_dict())
        encoder_config.pop("preprocessor", None)
        encoder = type(teacher.encoder).from_config(encoder_config)
    model_config = dict(teacher.get_config())
    model_config["encoder"] = keras.saving.serialize_keras_object(encoder)
    student = type(teacher).from_config(model_config)
    if mapping is not None:
        copy_layers(teacher, student, mapping)
    check_student(teacher, student)
    return student


def copy_layers(teacher, student, mapping):
    """Student encoder layer i := teacher layer mapping[i]; embeddings, pooler and the head (the task
    model's layers outside the encoder, by name) copied whole."""
    source, target = teacher.encoder, student.encoder
    target.embeddings.set_weights(source.embeddings.get_weights())
    target.pooler.set_weights(source.pooler.get_weights())
    for layer, index in zip(target.transformer_layers, mapping, strict=True):
        layer.set_weights(source.transformer_layers[index].get_weights())
    for layer in student.layers:
        if layer is not target and layer.weights:
            layer.set_weights(teacher.get_layer(layer.name).get_weights())


def check_student(teacher, student):
    """Raises ValueError unless `student` can stand for `teacher`: the same class and head arguments, the
    same vocabulary (size and tokens) and casing, the same sequence length, and position embeddings for
    it."""
    if type(student) is not type(teacher):
        raise ValueError(f"the student is a {type(student).__name__} but the teacher a "
                         f"{type(teacher).__name__}: a student is of its teacher's class")
    for name in type(teacher).head_arg_names:  # the arguments that define a task's head
        if getattr(student, name, None) != getattr(teacher, name, None):
            raise ValueError(f"the student has {name}={getattr(student, name, None)} but the teacher "
                             f"{name}={getattr(teacher, name, None)}")
    config = student.encoder.config
    own, other = teacher.preprocessor, student.preprocessor
    with_vocab = f" ({own.tokenizer.vocab_file})" if own is not None and own.tokenizer.vocab_file else ""
    try:
        check_vocab_size(config, teacher.encoder.config.vocab_size, "of the teacher" + with_vocab)
    except ValueError as e:
        raise ValueError(f"the student's vocab is not the teacher's: {e}") from None
    if own is None or other is None:
        if own is not other:
            raise ValueError("the teacher and the student must both have a preprocessor, or neither")
        return
    try:
        check_agrees(own, other)
    except ValueError as e:
        raise ValueError(f"the student's vocab is not the teacher's: {e}") from None
    if other.seq_length != own.seq_length:
        raise ValueError(f"the student packs seq_length={other.seq_length} but the teacher "
                         f"seq_length={own.seq_length}: a student reads what its teacher reads")
    check_seq_length(config, own.seq_length, name="the teacher's seq_length")
